"""`make up` / `make down` / `make status`: the whole product on one machine.

    python scripts/stack.py up       start everything, print the URL, wait until every /readyz answers
    python scripts/stack.py down     stop what `up` started, by process id
    python scripts/stack.py status   each component, its port and state
    python scripts/stack.py run NAME one Procfile process: runs and restarts one service (used by honcho)

Every service runs as its own process (honcho, from the Procfile) with the environment the Helm
chart sets (deploy/local/stack.env), behind a local nginx acting as the ingress. Like a kubelet,
each Procfile process restarts its service when it dies (after a growing back-off), so one crashed
service does not take the others down; Postgres, Redis and the model server are supervised the same
way (scripts/supervisor.py, started by scripts/local_infra.py), and `status` shows every restart.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heartbeat
import local_infra as infra
import supervisor

ROOT = infra.ROOT
LOCAL = infra.LOCAL
RUN = infra.RUN
LOGS = infra.LOGS
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = VENV_BIN / "python"
INGRESS_PORT = 8080
INGRESS = f"http://localhost:{INGRESS_PORT}"
HONCHO_PID = RUN / "honcho.pid"
# Which infrastructure `up` started itself (and so `down` stops).
STARTED_INFRA = RUN / "stack-infra.json"
# The chart's default chat model, used with Ollama when ORCHESTRATOR_LLM_MODEL is not set.
CHART_LLM_MODEL = "qwen3:8b"
# The embedded model of the local model server (Qwen2.5-Coder-1.5B-Instruct, see docs/model-server.md).
LOCAL_LLM_MODEL = "qwen2.5-coder:1.5b"
LOCAL_MODEL_SETTINGS = {
    # The server's context window (MODEL_SERVER_LLAMA_CONTEXT) and its cap on generated tokens.
    "ORCHESTRATOR_LLM_NUM_CTX": "16384",
    "ORCHESTRATOR_LLM_MAX_OUTPUT_TOKENS": "1024",
    # Greedy decoding: a 1.5B model chooses tools best without sampling noise.
    "ORCHESTRATOR_LLM_TEMPERATURE": "0",
    # A cold prompt (system prompt and every tool, no saved state yet) is read for 3-6 minutes on
    # 2 cores before the first token: silence that long is the model working, not a dead server.
    "ORCHESTRATOR_LLM_TIMEOUT_SECONDS": "600",
}
# Set by choose_llm(), on top of deploy/local/stack.env.
LLM_VARIABLES = ("ORCHESTRATOR_LLM_BASE_URL", "ORCHESTRATOR_LLM_MODEL", "GATEWAY_MODEL_LABEL", "GATEWAY_PROVIDER_LABEL")
READY_TIMEOUT_SECONDS = 300.0
# Restart back-off of a crashed service: first wait, cap, and the run time after which it resets.
BACKOFF_FIRST, BACKOFF_MAX, BACKOFF_RESET_AFTER = 2.0, 30.0, 60.0


@dataclass(frozen=True)
class Service:
    name: str
    package: str
    port: int

    @property
    def command(self) -> list[str]:
        return [str(PYTHON), "-m", self.package]

    def runnable(self) -> bool:
        return module_exists(f"{self.package}.__main__")


SERVICES = [
    Service("raster-tools", "stacgis_raster", 8011),
    Service("vector-tools", "stacgis_vector", 8012),
    Service("knowledge-tools", "stacgis_knowledge", 8013),
    Service("memory-tools", "stacgis_memory", 8014),
    Service("agent-orchestrator", "stacgis_orchestrator", 8001),
    Service("chat-gateway", "stacgis_gateway", 8000),
]
BY_NAME = {service.name: service for service in SERVICES}


def say(message: str) -> None:
    print(f"[stack] {message}", flush=True)


def module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


# -- environment ---------------------------------------------------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; ${ROOT} and ${LOCAL} expand to the checkout and its .local folder."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().replace("${ROOT}", str(ROOT)).replace("${LOCAL}", str(LOCAL))
    return values


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """Status and body; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
    except OSError:
        return 0, b""


def http_ok(url: str, timeout: float = 2.0) -> bool:
    return http_get(url, timeout)[0] == 200


def model_names(base_url: str) -> list[str] | None:
    """Models an Ollama-protocol server lists, or None when it does not answer."""
    status, body = http_get(base_url.rstrip("/") + "/api/tags", timeout=3.0)
    if status != 200:
        return None
    try:
        return [str(model.get("name")) for model in json.loads(body).get("models", [])]
    except (ValueError, AttributeError):
        return None


def has_model(names: list[str], model: str) -> bool:
    wanted = model if ":" in model else f"{model}:latest"
    return any(name in (wanted, model) for name in names)


def choose_llm(env: dict[str, str]) -> None:
    """Ollama when OLLAMA_BASE_URL answers, else the local model server with its real small model."""
    chosen_model = os.environ.get("ORCHESTRATOR_LLM_MODEL")
    if "ORCHESTRATOR_LLM_BASE_URL" in os.environ:
        base_url = os.environ["ORCHESTRATOR_LLM_BASE_URL"]
        model = chosen_model or CHART_LLM_MODEL
        provider = env.get("ORCHESTRATOR_LLM_PROVIDER", "ollama")
        say(f"LLM: {model} at {base_url} (ORCHESTRATOR_LLM_BASE_URL)")
    else:
        ollama = os.environ.get("OLLAMA_BASE_URL", "").strip()
        listed = model_names(ollama) if ollama else None
        if listed is not None:
            base_url, model, provider = ollama, chosen_model or CHART_LLM_MODEL, "ollama"
            say(f"LLM: Ollama at {ollama}, model {model}")
            if not has_model(listed, model):
                say(
                    f"warning: Ollama does not have {model} (it has: {', '.join(listed) or 'nothing'}); "
                    f"run `ollama pull {model}` or set ORCHESTRATOR_LLM_MODEL"
                )
        else:
            if ollama:
                say(f"OLLAMA_BASE_URL={ollama} does not answer: using the local model server")
            base_url = f"http://127.0.0.1:{infra.MODEL_PORT}"
            model = chosen_model or LOCAL_LLM_MODEL
            provider = "stacgis model server"
            check_local_model(base_url, model)
            # Also for the scripted model: runs that ask for the embedded one (options.model) must fit too.
            for name, value in LOCAL_MODEL_SETTINGS.items():
                env[name] = os.environ.get(name, value)
    env["ORCHESTRATOR_LLM_BASE_URL"] = base_url
    env["ORCHESTRATOR_LLM_MODEL"] = model
    env.setdefault("GATEWAY_MODEL_LABEL", model)
    env.setdefault("GATEWAY_PROVIDER_LABEL", provider)


def check_local_model(base_url: str, model: str) -> None:
    request = urllib.request.Request(
        base_url + "/api/show", data=json.dumps({"model": model}).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5):
            say(f"LLM: {model} on the local model server ({base_url})")
    except urllib.error.HTTPError as error:
        reason = error.read().decode(errors="replace")[:300]
        say(f"warning: the local model server cannot answer with {model}: {reason}")
    except OSError as error:
        say(f"warning: the local model server does not answer: {error}")


def stack_env() -> dict[str, str]:
    """The services' environment: stack.env, then the caller's variables, then the LLM choice."""
    env = {**read_env_file(ROOT / "deploy" / "local" / "stack.env"), **os.environ}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    choose_llm(env)
    return env


# -- data, migrations, frontend ----------------------------------------------------------------


def run_step(title: str, command: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
    say(title)
    # A line at least every 30 s with the time spent: a first data load is silent for minutes otherwise.
    code = heartbeat.run(command, title.split(" (")[0], prefix="[stack]", cwd=cwd, env=env)
    if code != 0:
        raise SystemExit(f"[stack] failed ({' '.join(command)} exited with {code}); see the output above")


def owner_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with every database URL the owner role's: migrations and data loads create and alter
    schemas, which the application role the services connect as may not."""
    owner = env.get("STACGIS_OWNER_DATABASE_URL")
    if not owner:
        return env
    return {
        **env,
        **{key: owner for key in env if key.endswith("_DATABASE_URL") and key != "STACGIS_OWNER_DATABASE_URL"},
    }


def prepare_data(env: dict[str, str], present: list[Service]) -> None:
    """Migrations and data loads, each idempotent (a second run only checks and skips), as the owner role."""
    env = owner_env(env)
    names = {service.name for service in present}
    python = str(PYTHON)
    for service in present:
        if module_exists(f"{service.package}.migrate"):
            run_step(f"{service.name}: applying migrations", [python, "-m", f"{service.package}.migrate"], env)
    if "raster-tools" in names:
        run_step(
            "raster-tools: demo data (COGs + STAC catalog; built once)",
            [python, "-m", "stacgis_raster.demo_data", "--cache", str(LOCAL / "cache"), "--out", str(LOCAL / "data")],
            env,
        )
    if "vector-tools" in names:
        run_step(
            "vector-tools: loading datasets (the first run embeds ~34k place names: 1-2 min; later runs skip)",
            [python, "-m", "stacgis_vector.load", "--cache", str(LOCAL / "cache")],
            env,
        )
    if "knowledge-tools" in names:
        documents = ROOT / "knowledge"
        if documents.is_dir():
            run_step(
                "knowledge-tools: ingesting knowledge/ (unchanged documents are skipped)",
                [python, "-m", "stacgis_knowledge.ingest", str(documents)],
                env,
            )
        else:
            say("warning: no knowledge/ folder: the knowledge base stays empty")


def frontend_sources(frontend: Path) -> list[Path]:
    files = [frontend / name for name in ("index.html", "package.json", "package-lock.json", "vite.config.ts")]
    for folder in ("src", "public"):
        files.extend(path for path in (frontend / folder).rglob("*") if path.is_file())
    return [path for path in files if path.exists()]


def build_frontend(env: dict[str, str]) -> Path:
    frontend = ROOT / "frontend"
    dist = frontend / "dist"
    index = dist / "index.html"
    if not (frontend / "package.json").exists():
        say("warning: frontend/ has no package.json: the ingress serves no web app")
        dist.mkdir(parents=True, exist_ok=True)
        return dist
    newest = max((path.stat().st_mtime for path in frontend_sources(frontend)), default=0.0)
    if index.exists() and index.stat().st_mtime >= newest:
        return dist
    if not (frontend / "node_modules").is_dir():
        run_step("frontend: installing npm packages", ["npm", "ci", "--no-audit", "--no-fund"], env, cwd=frontend)
    run_step("frontend: building (vite)", ["npm", "run", "build", "--silent"], env, cwd=frontend)
    return dist


# -- ingress -------------------------------------------------------------------------------------


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(path)), None
    )
    if not found:
        raise SystemExit("[stack] nginx is missing: run `make setup` (as root it installs nginx-light)")
    return found


def nginx_command() -> list[str]:
    return [nginx_binary(), "-p", str(LOCAL / "nginx"), "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"]


def content_security_policy(env: dict[str, str]) -> str:
    """frontend/csp.conf, with the hosts set_map_style may use (ORCHESTRATOR_MAP_STYLE_HOSTS) as the chart adds them."""
    policy = next(line for line in (ROOT / "frontend" / "csp.conf").read_text().splitlines() if line.startswith("add_"))
    hosts = " ".join(json.loads(env.get("ORCHESTRATOR_MAP_STYLE_HOSTS") or "[]"))
    if hosts:
        policy = re.sub(r"(img-src [^;]*|connect-src [^;]*)", lambda m: f"{m.group(1)} {hosts}", policy)
    return policy + "\n"


def write_nginx_config(dist: Path, env: dict[str, str]) -> None:
    folder = LOCAL / "nginx"
    tmp = folder / "tmp"
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        # Run as root, nginx's workers drop to `nobody`, which must write request bodies here.
        nobody = pwd.getpwnam("nobody")
        for path in [tmp, *tmp.iterdir()]:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    mime_types = next(
        (p for p in ("/etc/nginx/mime.types", "/usr/local/etc/nginx/mime.types") if os.path.exists(p)), None
    )
    if mime_types is None:
        raise SystemExit("[stack] nginx's mime.types is missing: reinstall nginx (nginx-light)")
    (folder / "csp.conf").write_text(content_security_policy(env))
    template = (ROOT / "deploy" / "local" / "nginx.conf.template").read_text()
    replacements = {
        "RUN": RUN,
        "LOGS": LOGS,
        "TMP": tmp,
        "DIST": dist,
        "MIME_TYPES": mime_types,
        "CSP": folder / "csp.conf",
    }
    config = re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: str(replacements[m.group(1)]), template)
    (folder / "nginx.conf").write_text(config)
    check = subprocess.run([*nginx_command()[:-2], "-t", "-q"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise SystemExit(f"[stack] the ingress configuration is invalid:\n{check.stderr}")


# -- the Procfile processes (`run NAME`) --------------------------------------------------------


def process_command(name: str) -> list[str]:
    if name == "ingress":
        return nginx_command()
    if name in BY_NAME:
        return BY_NAME[name].command
    raise SystemExit(f"[stack] unknown process {name!r}; known: ingress, {', '.join(BY_NAME)}")


def read_state(name: str) -> dict[str, Any]:
    return supervisor.read_state(RUN, name)


def supervise(name: str) -> int:
    """Run one process, its output appended to .local/logs/NAME.log; restart it when it dies."""
    program = supervisor.Program(
        name=name,
        command=process_command(name),
        run_dir=RUN,
        log_path=LOGS / f"{name}.log",
        cwd=ROOT,
        backoff=supervisor.Backoff(BACKOFF_FIRST, BACKOFF_MAX, BACKOFF_RESET_AFTER),
    )
    return supervisor.supervise(program)


# -- up / down / status --------------------------------------------------------------------------


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def honcho_pid() -> int | None:
    pid = read_pid(HONCHO_PID)
    return pid if pid is not None and supervisor.pid_alive(pid) else None


def discover() -> tuple[list[Service], list[Service]]:
    present = [service for service in SERVICES if service.runnable()]
    missing = [service for service in SERVICES if not service.runnable()]
    return present, missing


def ready(service: Service) -> bool:
    return http_ok(f"http://127.0.0.1:{service.port}/readyz")


def ingress_ready(with_gateway: bool) -> bool:
    path = "/api/v1/chat/capacity" if with_gateway else "/"
    return http_ok(f"http://127.0.0.1:{INGRESS_PORT}{path}")


def log_tail(name: str, lines: int = 15) -> str:
    try:
        text = (LOGS / f"{name}.log").read_text(errors="replace").splitlines()
    except OSError:
        return "    (no log yet)"
    return "\n".join("    " + line for line in text[-lines:])


def wait_ready(services: list[Service], timeout: float = READY_TIMEOUT_SECONDS) -> None:
    started = time.monotonic()
    deadline = started + timeout
    pending = {service.name: service for service in services}
    with_gateway = "chat-gateway" in pending
    reported = time.monotonic()
    while pending:
        for name, service in list(pending.items()):
            if ready(service):
                say(f"{name} ready on 127.0.0.1:{service.port} ({time.monotonic() - started:.1f} s)")
                del pending[name]
        if not pending:
            break
        if honcho_pid() is None:
            raise SystemExit(f"[stack] the process manager stopped; see {LOGS / 'services.log'}")
        crashing = [name for name in pending if read_state(name).get("crash_loop")]
        if crashing or time.monotonic() > deadline:
            problem = "keeps crashing" if crashing else f"is not ready after {timeout:.0f} s"
            details = "\n".join(
                f"  {name} {problem} ({read_state(name).get('last_exit') or 'no exit'}); end of {LOGS / name}.log:\n"
                f"{log_tail(name)}"
                for name in (crashing or pending)
            )
            raise SystemExit(f"[stack] not ready:\n{details}\n[stack] the rest keeps running; `make down` stops it")
        if time.monotonic() - reported > 15:
            say(f"waiting for {', '.join(pending)} ... ({heartbeat.elapsed(time.monotonic() - started)})")
            reported = time.monotonic()
        time.sleep(0.5)
    while not ingress_ready(with_gateway):
        if time.monotonic() > deadline:
            raise SystemExit(f"[stack] the ingress does not answer on :{INGRESS_PORT}; see {LOGS / 'ingress.log'}")
        time.sleep(0.3)


def record_started_infra(started: dict[str, bool]) -> None:
    previous: dict[str, bool] = {}
    with contextlib.suppress(OSError, ValueError):
        previous = json.loads(STARTED_INFRA.read_text())
    # Still ours if an earlier `up` started it and it was not stopped since.
    merged = {name: bool(started.get(name) or previous.get(name)) for name in ("postgres", "redis", "model-server")}
    STARTED_INFRA.write_text(json.dumps(merged))


def start_processes(env: dict[str, str], names: list[str]) -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / "services.log").open("ab") as log:
        process = subprocess.Popen(
            [str(VENV_BIN / "honcho"), "-f", str(ROOT / "Procfile"), "-d", str(ROOT), "start", *names],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    HONCHO_PID.write_text(str(process.pid))
    return process.pid


def print_banner(env: dict[str, str] | None, missing: list[Service]) -> None:
    status, body = http_get(f"http://127.0.0.1:{INGRESS_PORT}/api/v1/info")
    model = env.get("ORCHESTRATOR_LLM_MODEL", "?") if env else "?"
    if status == 200:
        try:
            info = json.loads(body)
            model = f"{info.get('model')} ({info.get('provider')})"
        except ValueError:
            pass
    print(f"\nstacgis is ready: {INGRESS}   model: {model}   logs: {LOGS}", flush=True)
    if missing:
        names = ", ".join(service.name for service in missing)
        print(f"INCOMPLETE: not installed yet, so not started: {names}", flush=True)
    print(flush=True)


def check_ports_free(services: list[Service]) -> None:
    """Refuse to start next to something already serving on the stack's ports."""
    taken = [f"{s.name} :{s.port}" for s in services if infra.port_open(s.port)]
    if infra.port_open(INGRESS_PORT):
        taken.append(f"ingress :{INGRESS_PORT}")
    if taken:
        raise SystemExit(
            f"[stack] already in use: {', '.join(taken)}; stop what listens there (`make down` if it is a "
            "stack whose process manager was lost; `ss -ltnp` names the process)"
        )


def up() -> None:
    RUN.mkdir(parents=True, exist_ok=True)
    present, missing = discover()
    if honcho_pid() is not None:
        say("the stack is already running; checking it")
        wait_ready([service for service in present if not ready(service)])
        print_banner(None, missing)
        return
    for service in missing:
        say(f"warning: {service.name} is not installed ({service.package}.__main__ not found): it will not run")
    nginx_binary()
    check_ports_free(present)
    if not (VENV_BIN / "honcho").exists():
        raise SystemExit("[stack] honcho is missing from .venv: run `make setup`")
    started = {"postgres": infra.postgres_up(), "redis": infra.redis_up(), "model-server": infra.model_server_up()}
    record_started_infra(started)
    env = stack_env()
    prepare_data(env, present)
    dist = build_frontend(env)
    write_nginx_config(dist, env)
    names = [service.name for service in present] + ["ingress"]
    pid = start_processes(env, names)
    say(f"started {', '.join(names)} (process manager pid {pid}); logs in {LOGS}")
    wait_ready(present)
    print_banner(env, missing)


def stop_pid(pid: int, what: str, grace: float = 15.0) -> None:
    if not supervisor.pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and supervisor.pid_alive(pid):
        time.sleep(0.1)
    if supervisor.pid_alive(pid):
        say(f"{what} (pid {pid}) did not stop in {grace:.0f} s: killing it")
        os.kill(pid, signal.SIGKILL)


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def down() -> None:
    pid = honcho_pid()
    if pid is not None:
        # honcho forwards SIGTERM to every Procfile process group (supervisor and service alike).
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and supervisor.pid_alive(pid):
            time.sleep(0.1)
        if supervisor.pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
        say("services stopped")
    HONCHO_PID.unlink(missing_ok=True)
    # Anything left behind (the process manager killed hard): stop it by the pids its supervisor wrote,
    # the supervisor first so that it does not restart the service.
    for name in [*BY_NAME, "ingress"]:
        watcher = read_state(name).get("supervisor")
        if isinstance(watcher, int) and supervisor.pid_alive(watcher) and f"run {name}" in command_line(watcher):
            stop_pid(watcher, f"{name}'s supervisor", grace=20.0)
        leftover = read_pid(RUN / f"{name}.pid")
        expected = "nginx" if name == "ingress" else BY_NAME[name].package
        if leftover is not None and supervisor.pid_alive(leftover) and expected in command_line(leftover):
            stop_pid(leftover, name)
            say(f"{name} stopped (pid {leftover})")
        (RUN / f"{name}.pid").unlink(missing_ok=True)
        (RUN / f"{name}.json").unlink(missing_ok=True)
    try:
        started = json.loads(STARTED_INFRA.read_text())
    except (OSError, ValueError):
        started = {}
    if started.get("model-server"):
        infra.model_server_down()
    if started.get("redis"):
        infra.redis_down()
    if started.get("postgres"):
        infra.postgres_down()
    kept = [name for name in ("postgres", "redis", "model-server") if not started.get(name)]
    if kept:
        say(f"left running (not started by `make up`): {', '.join(kept)}")
    STARTED_INFRA.unlink(missing_ok=True)


def status() -> int:
    problems = infra.status()
    running = honcho_pid() is not None
    for service in SERVICES:
        state = read_state(service.name) if running else {}
        if not service.runnable():
            text = "not installed"
            problems += 1
        elif ready(service):
            text = "ready"
        else:
            text = "down"
            problems += 1
        extra = supervisor.describe_state(state)
        problems += bool(state.get("crash_loop"))
        print(f"{service.name:18} 127.0.0.1:{service.port:<6} {text:14} {extra}")
    ingress = http_ok(f"http://127.0.0.1:{INGRESS_PORT}/")
    problems += not ingress
    ingress_state = read_state("ingress") if running else {}
    problems += bool(ingress_state.get("crash_loop"))
    details = ", ".join(part for part in (INGRESS, supervisor.describe_state(ingress_state)) if part)
    print(f"{'ingress':18} 127.0.0.1:{INGRESS_PORT:<6} {'up' if ingress else 'down':14} {details}")
    status_code, body = http_get(f"http://127.0.0.1:{INGRESS_PORT}/api/v1/info")
    if status_code == 200:
        info = json.loads(body)
        print(f"{'model':18} {info.get('model')} ({info.get('provider')})")
    print(f"{'logs':18} {LOGS}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the whole product locally.")
    parser.add_argument("command", choices=["up", "down", "status", "run"])
    parser.add_argument("name", nargs="?", help="with `run`: the Procfile process (a service or ingress)")
    args = parser.parse_args()
    if args.command == "up":
        up()
    elif args.command == "down":
        down()
    elif args.command == "run":
        if not args.name:
            parser.error("run needs the process name")
        sys.exit(supervise(args.name))
    else:
        sys.exit(1 if status() else 0)


if __name__ == "__main__":
    main()
