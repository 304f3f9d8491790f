"""The processes `make up` runs: which pid serves a port, and the pid files scripts/stack.py writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / ".local" / "run"


def listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:port."""
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr and connection.laddr.port == port:
            return int(connection.pid) if connection.pid is not None else None
    return None


def supervised_pid(name: str) -> int | None:
    """The pid of a service as its Procfile process (scripts/stack.py run NAME) recorded it."""
    try:
        return int((RUN / f"{name}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def supervisor_state(name: str) -> dict[str, Any]:
    try:
        state = json.loads((RUN / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def supervisor_alive(name: str) -> bool:
    supervisor = supervisor_state(name).get("supervisor")
    return isinstance(supervisor, int) and psutil.pid_exists(supervisor)
