"""A private stacgis stack for the load, fault and hostile suites and the benchmarks.

Every part is a real process we own, on free ports, so a test can kill, stall or restart it without
touching `make up`'s stack or anybody else's tests: Postgres + pgvector and Redis (through
scripts/local_infra.py with a private state directory), the local model server (scripted back end,
real embeddings), the four MCP tool servers, the orchestrator, one or more gateways and the nginx
ingress built from the same template `make up` uses. The services get `deploy/local/stack.env` (the
environment the chart sets) with the addresses rewritten, plus each suite's overrides.

As in `make up` and the chart, the services connect as the application role (no superuser, no DDL),
which is granted the rows of this stack's database; migrations and data loads run as the owner.

The Postgres state lives in .local/reliability (kept between runs, so the vector and knowledge data
load once); a second concurrent session falls back to a fresh temporary directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import asyncpg
import httpx

from stacgis_common.testing import REPO_ROOT, app_role_url, free_port, grant_app_role

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import local_infra  # scripts/local_infra.py: the Postgres binaries and roles
import stack_build  # scripts/stack_build.py: the owner's environment for migrations and data loads
import stack_env  # scripts/stack_env.py: stack.env as `make up` reads it
import stack_ingress  # scripts/stack_ingress.py: the nginx template as `make up` renders it

PYTHON = sys.executable
STATE_ROOT = REPO_ROOT / ".local" / "reliability"
DATA_DIR = REPO_ROOT / ".local" / "data"
CACHE_DIR = REPO_ROOT / ".local" / "cache"
STACK_ENV = REPO_ROOT / "deploy" / "local" / "stack.env"
LOCAL_INFRA = REPO_ROOT / "scripts" / "local_infra.py"
# Cities of a million people or more: the vector data loads in seconds instead of minutes.
VECTOR_MIN_POPULATION = "1000000"
KEEP_LOG_RUNS = 12

TOOL_SERVERS = {
    # name: (package, env prefix, readiness path)
    "raster": ("stacgis_raster", "RASTER_", "/readyz"),
    "vector": ("stacgis_vector", "VECTOR_", "/readyz"),
    "knowledge": ("stacgis_knowledge", "KNOWLEDGE_", "/readyz"),
    "memory": ("stacgis_memory", "MEMORY_", "/readyz"),
}


def say(message: str) -> None:
    print(f"[private-stack] {message}", file=sys.stderr, flush=True)


def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as scripts/stack.py reads them: ${ROOT} is the checkout, ${LOCAL} its .local folder."""
    return stack_env.read_env_file(path, root=REPO_ROOT, local=REPO_ROOT / ".local")


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def run_as_owner(title: str, command: list[str], env: dict[str, str]) -> None:
    """A migration or data load with every database URL of `env` the owner's (STACGIS_OWNER_DATABASE_URL)."""
    started = time.monotonic()
    done = subprocess.run(
        command,
        env={**os.environ, **stack_build.owner_env(env)},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{title} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    say(f"{title} ready ({time.monotonic() - started:.1f}s)")


class Proc:
    """One service process: started, awaited, killed (any signal) and restarted on the same port."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        port: int,
        log_dir: Path,
        ready_path: str = "/healthz",
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.port = port
        self.ready_path = ready_path
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> Proc:
        assert not self.alive, f"{self.name} is already running"
        self._log = self.log_path.open("ab")
        self._log.write(f"\n----- start {self.starts + 1} at {time.strftime('%H:%M:%S')} -----\n".encode())
        self._log.flush()
        self.process = subprocess.Popen(
            self.argv,
            env={**os.environ, **self.env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        self.starts += 1
        return self

    def ready(self, path: str | None = None, timeout: float = 2.0) -> bool:
        return http_ok(self.url + (path or self.ready_path), timeout)

    def wait_ready(self, timeout: float = 180.0, path: str | None = None) -> Proc:
        deadline = time.monotonic() + timeout
        while not self.ready(path):
            if not self.alive:
                raise RuntimeError(f"{self.name} exited ({self.process and self.process.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.name} not ready on {self.url}{path or self.ready_path} after {timeout:.0f}s:\n{self.tail()}"
                )
            time.sleep(0.2)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive:
            assert self.process is not None
            self.process.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
                try:
                    self.process.wait(15)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
        if self._log is not None and not self.alive:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def restart(self, timeout: float = 120.0) -> Proc:
        self.stop()
        return self.start().wait_ready(timeout)

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class Infra:
    """Postgres + pgvector and Redis of our own, run by scripts/local_infra.py in a private directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.pg_port = free_port()
        self.redis_port = free_port()
        self.env = {
            **os.environ,
            "STACGIS_LOCAL_DIR": str(state_dir),
            "STACGIS_PG_PORT": str(self.pg_port),
            "STACGIS_REDIS_PORT": str(self.redis_port),
        }

    database = "stacgis"

    def _owner_dsn(self, database: str) -> str:
        return f"postgresql://{local_infra.PG_USER}:{local_infra.PG_PASSWORD}@127.0.0.1:{self.pg_port}/{database}"

    @property
    def pg_dsn(self) -> str:
        """The owner role's (a superuser): migrations, data loads and the tests' own reads and plants."""
        return self._owner_dsn(self.database)

    @property
    def app_dsn(self) -> str:
        """The application role's, which every service connects as (see grant_app_role)."""
        return app_role_url(self.pg_dsn)

    def _admin(self, sql: str) -> None:
        async def run() -> None:
            connection = await asyncpg.connect(self._owner_dsn(local_infra.PG_DB))
            try:
                await connection.execute(sql)
            finally:
                await connection.close()

        asyncio.run(run())

    def use_fresh_database(self) -> None:
        """A new empty database for this stack (dropped by drop_database), instead of the kept one."""
        self.database = f"reliability_{uuid.uuid4().hex[:12]}"
        self._admin(f'CREATE DATABASE "{self.database}"')

    def grant_app_role(self) -> None:
        """The application role and its grants in this stack's database (idempotent), as `make up` makes
        them in its own: before the migrations, so the default privileges cover the tables they create."""
        grant_app_role(self.pg_dsn)

    def drop_database(self) -> None:
        if self.database != "stacgis":
            self._admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def up(self) -> None:
        """Start whichever of Postgres and Redis is not running (local_infra skips the running one)."""
        subprocess.run(
            [PYTHON, str(LOCAL_INFRA), "up", "--no-model-server"],
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=REPO_ROOT,
        )

    def down(self) -> None:
        subprocess.run([PYTHON, str(LOCAL_INFRA), "down"], env=self.env, check=False, stdout=subprocess.DEVNULL)

    def _pg_ctl(self, *args: str) -> None:
        command = [str(local_infra.pg_bin() / "pg_ctl"), "-D", str(self.state_dir / "pgdata"), *args]
        subprocess.run(local_infra.as_pg_user(command), check=True, stdout=subprocess.DEVNULL)

    def crash_postgres(self) -> None:
        """Immediate shutdown: every backend dies at once, no checkpoint (crash recovery on restart).

        Postgres stays down until `up()`: its supervisor is killed first, or it would bring the
        server back within a second and the outage a test means to hold would be over."""
        state = self.state_dir / "run" / "postgres.json"
        try:
            supervisor = json.loads(state.read_text()).get("supervisor")
        except (OSError, ValueError):
            supervisor = None
        if isinstance(supervisor, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor, signal.SIGKILL)
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def kill_redis(self) -> None:
        pid = int((self.state_dir / "run" / "redis.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        (self.state_dir / "run" / "redis.pid").unlink(missing_ok=True)


@contextlib.contextmanager
def state_directory() -> Iterator[Path]:
    """.local/reliability when free (its data is reused), else a fresh temporary directory."""
    STATE_ROOT.parent.mkdir(parents=True, exist_ok=True)
    lock = (STATE_ROOT.parent / "reliability.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        temporary = Path(tempfile.mkdtemp(prefix="stacgis-reliability-"))
        try:
            yield temporary
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        return
    try:
        STATE_ROOT.mkdir(exist_ok=True)
        yield STATE_ROOT
    finally:
        lock.close()


@dataclass
class StackOptions:
    gateways: int = 1
    ingress: bool = True
    tool_servers: tuple[str, ...] = ("raster", "vector", "knowledge", "memory")
    # Extra environment for every service (e.g. GATEWAY_MAX_CONCURRENT_RUNS=20).
    env: dict[str, str] = field(default_factory=dict)
    rules: list[dict[str, Any]] = field(default_factory=list)
    # A throwaway database (the data loads again, ~15 s) instead of the one kept in .local/reliability:
    # for suites that write what others should not read (poisoned documents, planted memories).
    fresh_database: bool = False
    # Span files as `make up` writes them (in this stack's log folder); off for benchmarks, since the
    # deployed services export spans over OTLP in the background instead.
    trace_files: bool = True
    # The ingress clears identity headers a client sends. With a header named here it passes that one
    # on instead: the tests play the authenticating proxy (trusted-header mode) in front of it.
    ingress_passes_user_header: str | None = None


class PrivateStack:
    def __init__(self, state_dir: Path, options: StackOptions) -> None:
        self.options = options
        self.state_dir = state_dir
        self.logs = state_dir / "logs" / time.strftime("%Y%m%d-%H%M%S")
        self.logs.mkdir(parents=True, exist_ok=True)
        # Keep the logs (and span files) of the last runs only.
        for old in sorted((state_dir / "logs").iterdir())[:-KEEP_LOG_RUNS]:
            shutil.rmtree(old, ignore_errors=True)
        self.infra = Infra(state_dir)
        self.model: Proc | None = None
        self.tools: dict[str, Proc] = {}
        self.orchestrator: Proc | None = None
        self.gateways: list[Proc] = []
        self.ingress: Proc | None = None
        self.ingress_port: int | None = None
        self.env: dict[str, str] = {}

    # Addresses.

    @property
    def base_url(self) -> str:
        """Where browsers would connect: the ingress, or the first gateway without one."""
        if self.ingress is not None:
            return self.ingress.url
        return self.gateways[0].url

    @property
    def model_url(self) -> str:
        assert self.model is not None
        return self.model.url

    def processes(self) -> list[Proc]:
        found = [self.model, *self.tools.values(), self.orchestrator, *self.gateways, self.ingress]
        return [proc for proc in found if proc is not None]

    # Start and stop.

    def _service_env(self) -> dict[str, str]:
        ports = {name: free_port() for name in self.options.tool_servers}
        orchestrator_port, model_port = free_port(), free_port()
        model = f"http://127.0.0.1:{model_port}"
        env = read_env_file(STACK_ENV)
        env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1",
                "MODEL_SERVER_PORT": str(model_port),
                "MODEL_SERVER_BACKEND": "scripted",
                "MODEL_SERVER_RULES_PATH": str(self.logs / "rules.json"),
                "ORCHESTRATOR_PORT": str(orchestrator_port),
                "ORCHESTRATOR_REDIS_URL": self.infra.redis_url,
                "ORCHESTRATOR_LLM_BASE_URL": model,
                "ORCHESTRATOR_LLM_MODEL": "scripted",
                "ORCHESTRATOR_EMBEDDING_BASE_URL": model,
                "ORCHESTRATOR_MCP_SERVERS": json.dumps(
                    {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
                ),
                "STACGIS_OWNER_DATABASE_URL": self.infra.pg_dsn,
                "GATEWAY_DATABASE_URL": self.infra.app_dsn,
                "GATEWAY_REDIS_URL": self.infra.redis_url,
                "GATEWAY_ORCHESTRATOR_URL": f"http://127.0.0.1:{orchestrator_port}",
                # Outside MCP clients reach this stack's tool servers, never the ones on the fixed ports.
                "GATEWAY_MCP_SERVERS": json.dumps(
                    {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
                ),
                "GATEWAY_MODEL_LABEL": "scripted",
                "RASTER_STAC_URL": str(DATA_DIR / "stac" / "catalog.json"),
                "RASTER_VECTOR_TOOLS_URL": f"http://127.0.0.1:{ports.get('vector', 9)}",
            }
        )
        for key in [k for k in env if k.endswith("_TRACE_FILE")]:
            if self.options.trace_files:
                env[key] = str(self.logs / "traces" / Path(env[key]).name)
            else:
                del env[key]
        for name, port in ports.items():
            prefix = TOOL_SERVERS[name][1]
            env[f"{prefix}PORT"] = str(port)
            env[f"{prefix}DATABASE_URL"] = self.infra.app_dsn
            env[f"{prefix}EMBEDDING_BASE_URL"] = model
            env[f"{prefix}LOG_LEVEL"] = "WARNING"
        env.update(self.options.env)
        return env

    def _prepare_data(self) -> None:
        """Migrations and the data every service expects (raster COGs + STAC, vector features, knowledge),
        as the owner: the services' role may not create or alter schemas."""
        steps: list[tuple[str, list[str]]] = []
        packages = [TOOL_SERVERS[name][0] for name in self.tools]
        if self.options.gateways:
            packages.append("stacgis_gateway")
        for package in packages:
            if installed(f"{package}.migrate"):
                steps.append((f"{package} migrations", [PYTHON, "-m", f"{package}.migrate"]))
        if "raster" in self.tools:
            steps.append(
                (
                    "raster demo data",
                    [PYTHON, "-m", "stacgis_raster.demo_data", "--cache", str(CACHE_DIR), "--out", str(DATA_DIR)],
                )
            )
        if "vector" in self.tools:
            steps.append(
                (
                    "vector data",
                    [
                        PYTHON,
                        "-m",
                        "stacgis_vector.load",
                        "--cache",
                        str(CACHE_DIR),
                        "--min-population",
                        VECTOR_MIN_POPULATION,
                    ],
                )
            )
        if "knowledge" in self.tools and installed("stacgis_knowledge.ingest"):
            steps.append(("knowledge base", [PYTHON, "-m", "stacgis_knowledge.ingest", str(REPO_ROOT / "knowledge")]))
        for title, command in steps:
            run_as_owner(title, command, self.env)

    def _nginx_config(self) -> Path:
        """deploy/local/nginx.conf.template with our paths, our port and our gateways as the upstream."""
        folder = self.logs / "nginx"
        tmp = stack_ingress.temp_dirs(folder)
        dist = folder / "dist"
        dist.mkdir(exist_ok=True)
        (dist / "index.html").write_text("<!doctype html><title>stacgis</title>")
        paths = {
            "RUN": folder,
            "LOGS": folder,
            "TMP": tmp,
            "LOCAL": folder,
            "DIST": dist,
            "MIME_TYPES": "/etc/nginx/mime.types",
            "CSP": REPO_ROOT / "frontend" / "csp.conf",
        }
        config = stack_ingress.render_template(paths)
        assert self.ingress_port is not None
        raster = self.tools["raster"].port if "raster" in self.tools else 9
        config = config.replace("127.0.0.1:8080", f"127.0.0.1:{self.ingress_port}")
        config = config.replace(
            "server 127.0.0.1:8000;", " ".join(f"server 127.0.0.1:{g.port};" for g in self.gateways)
        )
        config = config.replace("127.0.0.1:8011", f"127.0.0.1:{raster}")
        passed = self.options.ingress_passes_user_header
        if passed:
            variable = "$http_" + passed.lower().replace("-", "_")
            config = config.replace(f'proxy_set_header {passed} "";', f"proxy_set_header {passed} {variable};")
        path = folder / "nginx.conf"
        path.write_text(config)
        return path

    def start(self) -> PrivateStack:
        started = time.monotonic()
        self.infra.up()
        if self.options.fresh_database:
            self.infra.use_fresh_database()
        self.infra.grant_app_role()
        self.env = self._service_env()
        (self.logs / "rules.json").write_text(json.dumps({"rules": self.options.rules}, indent=1))
        # Under the local stack's supervisor, as `make up` runs it: a killed model server comes back by
        # itself. The supervisor's lines go to this Proc's log, the server's output to logs/supervised/.
        supervised = {
            "STACGIS_LOCAL_DIR": str(self.state_dir),
            "STACGIS_LOGS_DIR": str(self.logs / "supervised"),
            "STACGIS_MODEL_SERVER_PORT": self.env["MODEL_SERVER_PORT"],
        }
        self.model = Proc(
            "model-server",
            [PYTHON, str(LOCAL_INFRA), "supervise", "model-server"],
            {**self.env, **supervised},
            int(self.env["MODEL_SERVER_PORT"]),
            self.logs,
            "/readyz",
        ).start()
        for name in self.options.tool_servers:
            package, prefix, ready = TOOL_SERVERS[name]
            if installed(package):
                self.tools[name] = Proc(
                    f"{name}-tools", [PYTHON, "-m", package], self.env, int(self.env[f"{prefix}PORT"]), self.logs, ready
                )
            else:
                say(f"{name}-tools is not installed: the stack runs without it")
        if len(self.tools) != len(self.options.tool_servers):
            servers = json.loads(self.env["ORCHESTRATOR_MCP_SERVERS"])
            self.env["ORCHESTRATOR_MCP_SERVERS"] = json.dumps({k: v for k, v in servers.items() if k in self.tools})
        self.model.wait_ready()  # the loaders embed through it
        self._prepare_data()
        for proc in self.tools.values():
            proc.start()
        for proc in self.tools.values():
            proc.wait_ready()
        self.orchestrator = (
            Proc(
                "orchestrator",
                [PYTHON, "-m", "stacgis_orchestrator"],
                self.env,
                int(self.env["ORCHESTRATOR_PORT"]),
                self.logs,
                "/readyz",
            )
            .start()
            .wait_ready()
        )
        for index in range(self.options.gateways):
            port = free_port()
            env = {**self.env, "GATEWAY_PORT": str(port)}
            self.gateways.append(
                Proc(f"gateway-{index + 1}", [PYTHON, "-m", "stacgis_gateway"], env, port, self.logs, "/readyz").start()
            )
        for proc in self.gateways:
            proc.wait_ready()
        if self.options.ingress:
            self.ingress_port = free_port()
            config = self._nginx_config()
            self.ingress = (
                Proc(
                    "ingress",
                    ["nginx", "-p", str(config.parent), "-c", str(config), "-e", "stderr", "-g", "daemon off;"],
                    self.env,
                    self.ingress_port,
                    self.logs,
                    "/api/v1/chat/capacity",
                )
                .start()
                .wait_ready(30)
            )
        say(f"stack ready in {time.monotonic() - started:.1f}s: {self.base_url} (logs in {self.logs})")
        return self

    def stop(self) -> None:
        for proc in reversed(self.processes()):
            proc.stop()
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            self.infra.drop_database()
        self.infra.down()

    # The scripted model's rules.

    def set_rules(self, rules: list[dict[str, Any]], position: str | None = None) -> None:
        """Replace the rules (position None) or add some before/after the others."""
        if position is None:
            response = httpx.put(f"{self.model_url}/_scripted/rules", json={"rules": rules}, timeout=10)
        else:
            response = httpx.post(
                f"{self.model_url}/_scripted/rules", json={"rules": rules, "position": position}, timeout=10
            )
        response.raise_for_status()

    def reset_rules(self) -> None:
        httpx.delete(f"{self.model_url}/_scripted/rules", timeout=10).raise_for_status()

    def model_requests(self, contains: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": limit}
        if contains:
            params["contains"] = contains
        response = httpx.get(f"{self.model_url}/_scripted/requests", params=params, timeout=10)
        response.raise_for_status()
        body = response.json()
        return list(body["requests"] if isinstance(body, dict) else body)

    def failure_logs(self) -> str:
        logs = [f"===== {proc.name} =====\n{proc.tail(2500)}" for proc in self.processes()]
        for path in sorted((self.logs / "supervised").glob("*.log")):
            logs.append(f"===== {path.stem} (supervised) =====\n{path.read_text(errors='replace')[-2500:]}")
        return "\n".join(logs)

    def supervised_pid(self, name: str) -> int:
        """The pid of a process run by the local stack's supervisor (postgres, redis, model-server)."""
        return int((self.state_dir / "run" / f"{name}.pid").read_text().strip())

    def supervised_state(self, name: str) -> dict[str, Any]:
        path = self.state_dir / "run" / f"{name}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def private_stack(options: StackOptions) -> Iterator[PrivateStack]:
    with state_directory() as state_dir:
        stack = PrivateStack(state_dir, options)
        try:
            stack.start()
            yield stack
        except BaseException:
            say("stack logs:\n" + stack.failure_logs())
            raise
        finally:
            stack.stop()
