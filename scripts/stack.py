"""`make up` / `make down` / `make status`: the whole product on one machine.

    python scripts/stack.py up       start everything, wait until every /readyz answers, print the URL,
                                     then load the place names (the product is usable meanwhile)
    python scripts/stack.py down     stop what `up` started, by process id
    python scripts/stack.py status   each component, its port and state
    python scripts/stack.py run NAME one Procfile process: runs and restarts one service (used by honcho)

Every service runs as its own process (honcho, from the Procfile) with the environment the Helm
chart sets (deploy/local/stack.env), behind a local nginx acting as the ingress. Like a kubelet,
each Procfile process restarts its service when it dies (after a growing back-off), so one crashed
service does not take the others down; Postgres, Redis and the model server are supervised the same
way (scripts/supervisor.py, started by scripts/local_infra.py), and `status` shows every restart.

The parts live next to it: stack_env.py (stack.env and the LLM choice), stack_build.py (migrations,
data loads, the frontend build), stack_ingress.py (the nginx configuration) and stack_services.py
(the services, their Procfile processes, readiness and `status`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import local_infra as infra
import supervisor
from stack_build import build_frontend, load_place_names, prepare_data, run_step
from stack_env import (
    CHART_LLM_MODEL,
    LLM_VARIABLES,
    LOCAL_LLM_MODEL,
    LOCAL_MODEL_SETTINGS,
    LOGS,
    RUN,
    VENV_BIN,
    choose_llm,
    http_get,
    read_env_file,
    say,
    stack_env,
)
from stack_ingress import INGRESS, INGRESS_PORT, nginx_binary, write_nginx_config
from stack_services import (
    BY_NAME,
    HONCHO_PID,
    SERVICES,
    Service,
    check_ports_free,
    discover,
    honcho_pid,
    read_pid,
    read_state,
    ready,
    start_processes,
    status,
    supervise,
    wait_ready,
)

# Names other code reads from here (tests/e2e/test_stack.py, tests/infra/test_heartbeat.py, tests/fault/soak.py).
__all__ = [
    "CHART_LLM_MODEL",
    "INGRESS_PORT",
    "LLM_VARIABLES",
    "LOCAL_LLM_MODEL",
    "LOCAL_MODEL_SETTINGS",
    "SERVICES",
    "choose_llm",
    "main",
    "read_env_file",
    "run_step",
    "stack_env",
]

# Which infrastructure `up` started itself (and so `down` stops).
STARTED_INFRA = RUN / "stack-infra.json"


def record_started_infra(started: dict[str, bool]) -> None:
    previous: dict[str, bool] = {}
    with contextlib.suppress(OSError, ValueError):
        previous = json.loads(STARTED_INFRA.read_text())
    # Still ours if an earlier `up` started it and it was not stopped since.
    merged = {name: bool(started.get(name) or previous.get(name)) for name in ("postgres", "redis", "model-server")}
    STARTED_INFRA.write_text(json.dumps(merged))


def print_banner(env: dict[str, str] | None, missing: list[Service], places_pending: bool = False) -> None:
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
    if places_pending:
        print(
            "Open it now: the place names load next (below). Until they are in, the map and the agent find only"
            " the places already loaded, and the map says which are still arriving.",
            flush=True,
        )
    print(flush=True)


def up() -> None:
    RUN.mkdir(parents=True, exist_ok=True)
    present, missing = discover()
    with_places = "vector-tools" in {service.name for service in present}
    if honcho_pid() is not None:
        say("the stack is already running; checking it")
        wait_ready([service for service in present if not ready(service)])
        print_banner(None, missing, with_places)
        if with_places:
            load_place_names(stack_env())  # skips what is in; finishes a load an earlier `up` did not
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
    print_banner(env, missing, with_places)
    if with_places:
        try:
            load_place_names(env)
        except SystemExit:
            say("the place names did not load; the rest keeps running. Run `make up` again to retry the load.")
            raise
        say(f"the place names are in: everything is up at {INGRESS}")


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
