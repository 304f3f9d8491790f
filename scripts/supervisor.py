"""The one supervisor of the local stack: every process `make up` starts runs under it.

Like a kubelet, it starts the process, waits for it to end, and starts it again after a back-off
that doubles with each quick exit (and resets once a run lasted long enough). Its state (child pid,
restarts, last exit reason, crash loop) is written to RUN/NAME.json for `make status`, and every
start and exit is a line in the process's log. A process that keeps exiting soon after its start is
in a crash loop: it is still restarted (at the longest back-off), and the state and log say so.

Used by scripts/stack.py (the Procfile services and the ingress) and scripts/local_infra.py
(Postgres, Redis and the model server).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any


@dataclass(frozen=True)
class Backoff:
    # First wait after an exit, its cap, and the run time after which an exit counts as a new failure.
    first: float = 2.0
    maximum: float = 30.0
    reset_after: float = 60.0
    # This many quick exits in a row are a crash loop.
    crash_loop_after: int = 3


@dataclass(frozen=True)
class Program:
    name: str
    command: Sequence[str]
    run_dir: Path
    log_path: Path
    cwd: Path
    env: Mapping[str, str] | None = None
    # Run as this OS user (Postgres refuses root); the process is exec'd directly, so its pid is the server's.
    user: str | None = None
    # What the process takes as "stop now, cleanly" (Postgres: SIGINT, its fast shutdown).
    stop_signal: int = signal.SIGTERM
    backoff: Backoff = Backoff()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is not running.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def describe_exit(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"


def state_path(run_dir: Path, name: str) -> Path:
    return run_dir / f"{name}.json"


def read_state(run_dir: Path, name: str) -> dict[str, Any]:
    try:
        data = json.loads(state_path(run_dir, name).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def write_state(run_dir: Path, name: str, state: dict[str, Any]) -> None:
    # Written whole and renamed, so `make status` never reads half a file.
    path = state_path(run_dir, name)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(state))
    partial.replace(path)


def describe_state(state: dict[str, Any]) -> str:
    """One line for `make status`: pid, restarts, last exit, crash loop."""
    parts = []
    if state.get("pid"):
        parts.append(f"pid {state['pid']}")
    elif state.get("supervisor"):
        parts.append(f"restarting in {state.get('next_start_in', 0):.0f} s")
    if state.get("restarts"):
        parts.append(f"{state['restarts']} restarts (last: {state.get('last_exit')} at {state.get('last_exit_at')})")
    if state.get("crash_loop"):
        parts.append(f"CRASH LOOP: {state.get('quick_exits')} quick exits in a row")
    return ", ".join(parts)


def supervise(program: Program, on_start: Callable[[int], None] | None = None) -> int:
    """Run `program` until SIGTERM/SIGINT, restarting it whenever it ends."""
    name, run_dir, log_path = program.name, program.run_dir, program.log_path
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    pid_path = run_dir / f"{name}.pid"
    backoff = program.backoff
    stopping = False
    child: subprocess.Popen[bytes] | None = None

    def note(message: str) -> None:
        line = f"[supervisor] {time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
        print(line, flush=True)
        with log_path.open("a") as log:
            log.write(line + "\n")

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(program.stop_signal)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    state: dict[str, Any] = {
        "name": name,
        "supervisor": os.getpid(),
        "pid": None,
        "restarts": 0,
        "last_exit": None,
        "last_exit_at": None,
        "quick_exits": 0,
        "crash_loop": False,
    }
    wait = backoff.first
    while not stopping:
        started = time.monotonic()
        try:
            with log_path.open("ab") as log:
                # Its own process group: a signal to the supervisor's group (honcho's stop) reaches the
                # child exactly once, forwarded by `stop` above.
                child = subprocess.Popen(
                    list(program.command),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=program.cwd,
                    env=dict(program.env) if program.env is not None else None,
                    start_new_session=True,
                    user=program.user,
                    group=program.user,
                    extra_groups=[] if program.user else None,
                )
        except OSError as error:
            child = None
            exit_reason = f"could not start: {error}"
        else:
            pid_path.write_text(str(child.pid))
            state.update(pid=child.pid, started_at=time.strftime("%Y-%m-%dT%H:%M:%S"), next_start_in=None)
            write_state(run_dir, name, state)
            note(f"{name} started (pid {child.pid})")
            if on_start is not None:
                on_start(child.pid)
            code = child.wait()
            exit_reason = describe_exit(code)
        if stopping:
            break
        ran = time.monotonic() - started
        if ran >= backoff.reset_after:
            wait, state["quick_exits"] = backoff.first, 0
        state["quick_exits"] += 1
        state["crash_loop"] = state["quick_exits"] >= backoff.crash_loop_after
        state.update(
            pid=None,
            restarts=state["restarts"] + 1,
            last_exit=exit_reason,
            last_exit_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
            next_start_in=wait,
        )
        loop_note = f"; CRASH LOOP ({state['quick_exits']} quick exits in a row)" if state["crash_loop"] else ""
        restart = f"restart {state['restarts']} in {wait:g} s"
        # The log line first: whoever sees the state can find its reason in the log.
        note(f"{name} stopped ({exit_reason}) after {ran:.1f} s; {restart}{loop_note}")
        write_state(run_dir, name, state)
        deadline = time.monotonic() + wait
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.1)
        wait = min(wait * 2, backoff.maximum)
    if child is not None:
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    pid_path.unlink(missing_ok=True)
    state_path(run_dir, name).unlink(missing_ok=True)
    note(f"{name} stopped")
    return 0


__all__ = ["Backoff", "Program", "describe_exit", "describe_state", "read_state", "supervise", "write_state"]
