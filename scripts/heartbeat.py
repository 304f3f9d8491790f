#!/usr/bin/env python3
"""Run a long command and say every so often that it is still working, with the time spent so far.

`make setup` and `make up` run steps that print nothing for minutes (pip building llama-cpp-python,
the first embedding of place names): without a sign of life a person cannot tell a slow step from a
hung one. Standard library only: setup.sh runs it with the system Python before .venv exists.

    heartbeat.py [--label TEXT] [--every SECONDS] [--show REGEX] [--prefix TEXT] -- COMMAND [ARGS...]

The command's output goes through as it comes, or only the lines matching --show (pip's
`Collecting`/`Building` noise filtered, as setup.sh wants); after --every seconds (default 30, or
STACGIS_HEARTBEAT_SECONDS) with nothing printed, a line says
`<label>: still working, 2 min 30 s (last: <its latest line>)`.
The exit status is the command's; when it fails, the lines --show held back are printed (the end of
them) so the error is not lost.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

DEFAULT_EVERY = 30.0
HIDDEN_TAIL_LINES = 40
LAST_LINE_CHARS = 110


def elapsed(seconds: float) -> str:
    """`45 s`, `2 min 05 s`, `1 h 03 min`."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def default_every() -> float:
    try:
        return max(float(os.environ.get("STACGIS_HEARTBEAT_SECONDS", DEFAULT_EVERY)), 0.1)
    except ValueError:
        return DEFAULT_EVERY


def run(
    command: Sequence[str],
    label: str,
    *,
    every: float | None = None,
    show: str | None = None,
    prefix: str = "",
    out: TextIO | None = None,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
) -> int:
    """Run `command` to its end, its output passed to `out` (filtered by `show`), with a heartbeat line."""
    stream = out or sys.stdout
    interval = every if every is not None else default_every()
    pattern = re.compile(show) if show else None
    lead = f"{prefix} " if prefix else ""
    lock = threading.Lock()
    quiet_since = [time.monotonic()]
    last = [""]
    hidden: collections.deque[str] = collections.deque(maxlen=HIDDEN_TAIL_LINES)

    def emit(text: str) -> None:
        with lock:
            stream.write(text + "\n")
            stream.flush()
            quiet_since[0] = time.monotonic()

    # Python children write through a pipe block-buffered: unbuffered, their lines come as they happen.
    child_env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        bufsize=1,
    )

    def pump() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip("\r\n")
            # Progress bars redraw with \r: the newest part is what is happening now.
            current = line.rsplit("\r", 1)[-1].strip()
            if current:
                last[0] = current
            if pattern is None or pattern.search(line):
                emit(line)
            else:
                hidden.append(line)

    reader = threading.Thread(target=pump, name="heartbeat-reader", daemon=True)
    reader.start()
    while True:
        try:
            # A line only after `interval` with nothing printed: steps that report progress themselves
            # (the place-name embedding) are not interrupted.
            code = process.wait(timeout=max(interval - (time.monotonic() - quiet_since[0]), 0.01))
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() - quiet_since[0] < interval:
                continue
            latest = last[0][:LAST_LINE_CHARS] + ("..." if len(last[0]) > LAST_LINE_CHARS else "")
            note = f" (last: {latest})" if latest else ""
            emit(f"{lead}{label}: still working, {elapsed(time.monotonic() - started)}{note}")
        except KeyboardInterrupt:
            process.terminate()
            raise
    reader.join()
    took = elapsed(time.monotonic() - started)
    if code == 0:
        emit(f"{lead}{label}: done in {took}")
    else:
        if hidden:
            emit(f"{lead}{label}: the end of its output:")
            for line in hidden:
                emit(f"    {line}")
        emit(f"{lead}{label}: failed after {took} (exit status {code})")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="", help="what the command does (default: the command)")
    parser.add_argument("--every", type=float, default=None, help="seconds between heartbeat lines")
    parser.add_argument("--show", default=None, help="print only output lines matching this regex")
    parser.add_argument("--prefix", default="", help="put in front of heartbeat lines, e.g. [setup]")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    return run(command, args.label or " ".join(command), every=args.every, show=args.show, prefix=args.prefix)


if __name__ == "__main__":
    sys.exit(main())
