"""The services of `make up`: which exist, their ports, the Procfile processes (`run NAME`) that keep
each one running, starting them under honcho, waiting until they are ready, and `status`.

Used by scripts/stack.py.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heartbeat
import local_infra as infra
import supervisor
from stack_env import LOGS, PYTHON, ROOT, RUN, VENV_BIN, http_get, http_ok, say
from stack_ingress import INGRESS, INGRESS_PORT, nginx_command

HONCHO_PID = RUN / "honcho.pid"
READY_TIMEOUT_SECONDS = 300.0
# Restart back-off of a crashed service: first wait, cap, and the run time after which it resets.
BACKOFF_FIRST, BACKOFF_MAX, BACKOFF_RESET_AFTER = 2.0, 30.0, 60.0


def module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@dataclass(frozen=True)
class Service:
    name: str
    package: str
    port: int
    ready_path: str = "/readyz"
    # The module `python -m` runs, when it is not the package's __main__.
    module: str | None = None

    @property
    def command(self) -> list[str]:
        return [str(PYTHON), "-m", self.module or self.package]

    def runnable(self) -> bool:
        return module_exists(self.module or f"{self.package}.__main__")


SERVICES = [
    # The STAC API raster-tools reads (rustac serving the demo catalog, as a cluster's would be external).
    Service("stac-api", "stacgis_raster", 7822, ready_path="/conformance", module="stacgis_raster.demo_data.stac_api"),
    Service("raster-tools", "stacgis_raster", 8011),
    Service("vector-tools", "stacgis_vector", 8012),
    Service("knowledge-tools", "stacgis_knowledge", 8013),
    Service("memory-tools", "stacgis_memory", 8014),
    Service("agent-orchestrator", "stacgis_orchestrator", 8001),
    Service("chat-gateway", "stacgis_gateway", 8000),
]
BY_NAME = {service.name: service for service in SERVICES}


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


# -- start, readiness, status --------------------------------------------------------------------


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
    return http_ok(f"http://127.0.0.1:{service.port}{service.ready_path}")


def ingress_ready(with_gateway: bool) -> bool:
    path = "/api/v1/chat/capacity" if with_gateway else "/"
    return http_ok(f"http://127.0.0.1:{INGRESS_PORT}{path}")


def log_tail(name: str, lines: int = 15) -> str:
    try:
        text = (LOGS / f"{name}.log").read_text(errors="replace").splitlines()
    except OSError:
        return "    (no log yet)"
    return "\n".join("    " + line for line in text[-lines:])


def wait_ready(services: Sequence[Service], timeout: float = READY_TIMEOUT_SECONDS) -> None:
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


def check_ports_free(services: Sequence[Service]) -> None:
    """Refuse to start next to something already serving on the stack's ports."""
    taken = [f"{s.name} :{s.port}" for s in services if infra.port_open(s.port)]
    if infra.port_open(INGRESS_PORT):
        taken.append(f"ingress :{INGRESS_PORT}")
    if taken:
        raise SystemExit(
            f"[stack] already in use: {', '.join(taken)}; stop what listens there (`make down` if it is a "
            "stack whose process manager was lost; `ss -ltnp` names the process)"
        )


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
