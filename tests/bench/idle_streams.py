"""The client side of bench_stack's idle-streams row: thousands of quiet SSE streams held cheaply.

A worker process holds its share of the streams on raw asyncio connections: one small Protocol object
per stream, no task and no HTTP library per stream, and the bytes as they arrive split into lines and
matched by prefix (`: ping`, `event: `). So the client costs a few KB and little CPU per stream, and
reports its own CPU and memory: a stream it counts as never pinged was not pinged by the server, not
lost behind a client that fell behind reading. Several workers split the streams (IdleClients).

A worker talks JSON lines with its parent (stdin: commands, stdout: answers):
  -> {"opened": n, "seconds": s}      every stream is open (its first event read), failed or timed out
  <- {"hold": [t0, t1]}               the hold lasts from t0 to t1 on time.monotonic() (system-wide)
  <- {"report": true}                 (after t1) answered with
  -> {"streams": [[alive, first_ping_s | null, pings], ...], "failures": {...}, "cpu_s": c, "wall_s": w,
      "peak_rss_kb": m}
  <- EOF                              close every stream and exit
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PATH = "/api/v1/chat/stream"
# Connections opening (connect, admission, first event) at once across all workers: the gateway's
# admission is what is paced, not the hold.
IN_FLIGHT = 200


class Hold:
    """The hold window every stream of a worker measures its pings in (unknown until the parent says)."""

    start = math.inf
    end = math.inf


class Stream(asyncio.Protocol):
    """One SSE stream: counts `: ping` comment lines in the hold and notes its first event and failure.

    The body is taken out of its chunked framing (a small state machine, whatever the write and read
    boundaries) and split into lines matched by prefix; nothing else of it is parsed or kept."""

    __slots__ = (
        "carry",
        "chunk_left",
        "chunked",
        "failure",
        "first_ping",
        "framing",
        "head",
        "hold",
        "opened",
        "pings",
        "request",
        "transport",
    )

    def __init__(self, hold: Hold, request: bytes, opened: asyncio.Future[bool]) -> None:
        self.hold = hold
        self.request = request
        self.opened: asyncio.Future[bool] | None = opened  # dropped once settled: nothing kept per stream
        self.transport: asyncio.BaseTransport | None = None
        self.head: bytes | None = b""  # the response head until it is complete, then None
        self.chunked = False
        self.framing = b""  # an incomplete chunk-size line, or the CRLF after a chunk's data
        self.chunk_left = 0  # data bytes left in the current chunk
        self.carry = b""  # an incomplete SSE line
        self.failure: str | None = None
        self.first_ping: float | None = None  # seconds from the hold's start
        self.pings = 0  # in the hold

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self.request)
        self.request = b""

    def data_received(self, data: bytes) -> None:
        if self.head is not None:
            head, found, data = (self.head + data).partition(b"\r\n\r\n")
            if not found:
                self.head = head
                return
            self.head = None
            status = (head.split(b" ", 2)[1:2] or [b"?"])[0]
            if status != b"200":
                self.fail(f"HTTP {status.decode(errors='replace')}")
                return
            self.chunked = b"\r\ntransfer-encoding: chunked" in head.lower()
        body, ended = self._unchunk(data) if self.chunked else (data, False)
        lines = (self.carry + body).split(b"\n")
        self.carry = lines.pop()
        for line in lines:
            if line.startswith(b": ping"):
                self._ping()
            elif line.startswith(b"event: "):
                self._event(line[7:].strip())
        if ended:  # after the lines that came with it (a first or an error event)
            self.fail("stream ended")

    def _unchunk(self, data: bytes) -> tuple[bytes, bool]:
        """The chunks' data in `data`, and whether the last chunk (the response's end) came."""
        body = []
        at = 0
        while at < len(data):
            if self.chunk_left:
                piece = data[at : at + self.chunk_left]
                body.append(piece)
                at += len(piece)
                self.chunk_left -= len(piece)
                continue
            end = data.find(b"\n", at)
            if end < 0:
                self.framing += data[at:]
                break
            line, self.framing, at = (self.framing + data[at:end]).strip(), b"", end + 1
            if not line:  # the CRLF that closes a chunk's data
                continue
            try:
                self.chunk_left = int(line.split(b";")[0], 16)
            except ValueError:
                self.fail("bad chunked framing")
                break
            if not self.chunk_left:  # the last chunk: the response is over
                return b"".join(body), True
        return b"".join(body), False

    def _ping(self) -> None:
        now = time.monotonic()
        if self.hold.start <= now <= self.hold.end:
            self.pings += 1
            if self.first_ping is None:
                self.first_ping = now - self.hold.start

    def _event(self, name: bytes) -> None:
        if name in (b"error", b"done"):
            self.fail("error event" if name == b"error" else "run ended")
        else:
            self._settle(True)

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self._settle(False)
        if self.transport is not None:
            self.transport.close()

    def _settle(self, opened: bool) -> None:
        if self.opened is not None:
            if not self.opened.done():  # wait_for cancels it when the open times out
                self.opened.set_result(opened)
            self.opened = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(type(exc).__name__ if exc else "closed by the server")
        self.transport = None


def request_bytes(host: str, port: int, user: str, message: str) -> bytes:
    body = json.dumps({"message": message}).encode()
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nX-Forwarded-User: {user}\r\n\r\n"
    )
    return head.encode() + body


def peak_rss_kb() -> int:
    """This process's peak RSS since it started (VmHWM: ru_maxrss would carry the parent's over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def open_stream(stream: Stream, host: str, port: int, timeout: float) -> bool:
    opened = stream.opened
    assert opened is not None
    try:
        await asyncio.wait_for(asyncio.get_running_loop().create_connection(lambda: stream, host, port), timeout)
        return await asyncio.wait_for(opened, timeout)  # False: it failed first (and says why)
    except (OSError, TimeoutError) as error:
        stream.fail("open timeout" if isinstance(error, TimeoutError) else type(error).__name__)
        return False


async def worker(url: str, users: list[str], message: str, in_flight: int, open_timeout: float) -> None:
    """Open one stream per user, then follow the parent's commands (module docstring)."""
    loop = asyncio.get_running_loop()
    target = urlsplit(url)
    host, port = target.hostname or "127.0.0.1", target.port or 80
    hold = Hold()
    streams = [Stream(hold, request_bytes(host, port, user, message), loop.create_future()) for user in users]
    started = time.monotonic()
    waiting = iter(streams)
    opened = 0

    async def opener() -> None:  # `in_flight` of these open the streams one after the other
        nonlocal opened
        for stream in waiting:
            ok = await open_stream(stream, host, port, open_timeout)
            opened += ok  # after the await: `opened += await ...` would add to a stale value

    await asyncio.gather(*(opener() for _ in range(in_flight)))
    say({"opened": opened, "seconds": round(time.monotonic() - started, 3)})

    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    cpu_at_hold, hold_received = cpu_seconds(), time.monotonic()
    while line := await commands.readline():
        command = json.loads(line)
        if "hold" in command:
            hold.start, hold.end = command["hold"]
            cpu_at_hold, hold_received = cpu_seconds(), time.monotonic()
        elif "report" in command:
            figures = [[s.failure is None, s.first_ping, s.pings] for s in streams]
            say(
                {
                    "streams": figures,
                    "failures": Counter(s.failure for s in streams if s.failure is not None),
                    "cpu_s": cpu_seconds() - cpu_at_hold,
                    "wall_s": time.monotonic() - hold_received,
                    "peak_rss_kb": peak_rss_kb(),
                }
            )
    for stream in streams:
        if stream.transport is not None:
            stream.transport.close()


def say(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


# The parent side.


@dataclass
class IdleFigures:
    """What the clients saw of one level's hold, over all workers."""

    streams: int
    opened: int = 0  # first event read before the hold
    open_seconds: float = 0.0  # until the slowest worker had opened its share
    alive: int = 0  # still open at the hold's end
    pinged: int = 0  # at least one `: ping` in the hold
    never_pinged: int = 0  # alive at the hold's end and no ping in it
    first_ping: list[float] = field(default_factory=list)  # seconds from the hold's start, per pinged stream
    failures: Counter[str] = field(default_factory=Counter)
    client_cpu: float = 0.0  # share of one core all workers used during the hold (1.0 = one core)
    client_rss_mb: float = 0.0  # peak RSS, summed over the workers


class IdleClients:
    """Worker processes that hold `streams` idle SSE streams against `url` between them, one per user
    `{user_prefix}{index}`."""

    def __init__(self, url: str, user_prefix: str, streams: int, workers: int, message: str = "[hang] idle") -> None:
        self.url = url
        self.user_prefix = user_prefix
        self.message = message
        count = max(1, min(workers, streams))
        bounds = [streams * i // count for i in range(count + 1)]
        self.shares = list(itertools.pairwise(bounds))  # [first, end) per worker
        self.procs: list[asyncio.subprocess.Process] = []
        self.figures = IdleFigures(streams)

    async def __aenter__(self) -> IdleClients:
        return self

    async def open(self, timeout: float) -> IdleFigures:
        """Start the workers and wait until every stream is open or failed (its own timeout: `timeout`)."""
        in_flight = max(1, IN_FLIGHT // len(self.shares))
        for first, end in self.shares:
            argv = [sys.executable, str(Path(__file__).resolve()), "--url", self.url, "--message", self.message]
            argv += ["--in-flight", str(in_flight), "--open-timeout", str(timeout), "--users", self.user_prefix]
            argv += ["--first", str(first), "--count", str(end - first)]
            self.procs.append(
                await asyncio.create_subprocess_exec(
                    *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**26
                )
            )
        for answer in await asyncio.gather(*(self._answer(p) for p in self.procs)):
            self.figures.opened += answer["opened"]
            self.figures.open_seconds = max(self.figures.open_seconds, answer["seconds"])
        return self.figures

    async def hold(self, seconds: float) -> None:
        """Hold every stream for `seconds` from a moment each worker knows before it comes."""
        start = time.monotonic() + 1.0  # the workers are told before it starts: no ping is missed
        self._tell({"hold": [start, start + seconds]})
        await asyncio.sleep(start + seconds - time.monotonic())

    async def report(self) -> IdleFigures:
        self._tell({"report": True})
        figures = self.figures
        for answer in await asyncio.gather(*(self._answer(p) for p in self.procs)):
            for alive, first_ping, pings in answer["streams"]:
                figures.alive += alive
                if pings:
                    figures.pinged += 1
                    figures.first_ping.append(first_ping)
                elif alive:
                    figures.never_pinged += 1
            figures.failures.update(answer["failures"])
            figures.client_cpu += answer["cpu_s"] / max(answer["wall_s"], 1e-3)
            figures.client_rss_mb += answer["peak_rss_kb"] / 1024
        return figures

    async def __aexit__(self, *_: object) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()

    def _tell(self, command: dict[str, Any]) -> None:
        line = json.dumps(command).encode() + b"\n"
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write(line)

    @staticmethod
    async def _answer(proc: asyncio.subprocess.Process) -> dict[str, Any]:
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if not line:
            raise RuntimeError(f"idle-stream worker {proc.pid} exited ({await proc.wait()}) without answering")
        answer: dict[str, Any] = json.loads(line)
        return answer


def main() -> None:
    parser = argparse.ArgumentParser(description="One worker of IdleClients (run by it, JSON lines on stdio).")
    parser.add_argument("--url", required=True, help="the gateway's base URL")
    parser.add_argument("--message", default="[hang] idle")
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT, help="streams opening at once")
    parser.add_argument("--open-timeout", type=float, default=120.0, help="seconds one stream may take to open")
    parser.add_argument("--users", required=True, help="user name prefix (the X-Forwarded-User header)")
    parser.add_argument("--first", type=int, default=0, help="index of the first user (one stream per user)")
    parser.add_argument("--count", type=int, required=True, help="streams to hold")
    args = parser.parse_args()
    users = [f"{args.users}{i}" for i in range(args.first, args.first + args.count)]
    asyncio.run(worker(args.url, users, args.message, args.in_flight, args.open_timeout))


if __name__ == "__main__":
    main()
