"""The product's own overhead, measured on a private stack on loopback (prints tables; not a test).

    .venv/bin/python tests/bench/bench_stack.py [--runs 40] [--tool-calls 200] [--streams 100,500,1000]
                                                [--idle 250,500,1000,2000] [--idle-workers 2] [--hold 12]
                                                [--profile] [--only ttft,tools,sse,idle]

1. Time to first token and token rate: the same scripted answer asked of the model server directly
   (Ollama /api/chat), of the orchestrator (POST /v1/runs) and through ingress + gateway +
   orchestrator (POST /api/v1/chat/stream): added p50/p99 and streamed-token throughput as a ratio
   of direct. The scripted model streams as fast as the protocol allows, so what is measured is the
   product's own overhead.
2. An MCP tool call through the orchestrator's tool pool over streamable HTTP against the same tool
   called in-process through an in-memory MCP client: overhead p50/p99.
3. SSE fan-out of one gateway process: 100, 500 and 1,000 concurrent active streams (each run emits
   an event every 0.5 s); p95 delivery delay (arrival minus the moment the event entered the run's
   Redis Stream, read from its entry id) and p95 inter-event gap.
4. Idle capacity: how many quiet SSE streams one gateway process holds, whether the heartbeat reaches
   every one (time from the hold's start to each stream's first `: ping`), its memory per stream, and
   the client's own CPU and memory (worker processes on raw connections, idle_streams.py).

Parts 3 and 4 put the gateway in front of the gateway suite's scripted orchestrator (the real
contract, a fraction of the cost of a real run), so the gateway is what is measured. --profile
records the gateway with py-spy during part 3 and prints where its CPU time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "load"))

from chat_client import chat, new_client, percentile  # noqa: E402
from idle_streams import IdleClients  # noqa: E402
from private_stack import (  # noqa: E402
    PYTHON,
    Infra,
    PrivateStack,
    Proc,
    StackOptions,
    private_stack,
    read_env_file,
    run_as_owner,
    state_directory,
)
from scripted_rules import PACED_PER_SECOND, reliability_rules  # noqa: E402

from stacgis_common.testing import free_port, token_for  # noqa: E402

GATEWAY_TESTS = ROOT / "services" / "chat-gateway" / "tests"
OUT = ROOT / ".local" / "bench"
PLAIN = "[plain] describe the terrain of Luxembourg"
PACED = "[paced] describe the terrain of Luxembourg"
PY_SPY = str(Path(sys.executable).parent / "py-spy")


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@contextlib.contextmanager
def profiled(processes: dict[str, int | None], label: str, enabled: bool) -> Iterator[None]:
    """py-spy every process for the duration of the block (stopped with SIGINT, which makes it write)."""
    recorders = []
    if enabled:
        OUT.mkdir(parents=True, exist_ok=True)
        for name, pid in processes.items():
            output = OUT / f"{name}-{label}.txt"
            command = [PY_SPY, "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--output", str(output)]
            recorders.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # py-spy attaches
    try:
        yield
    finally:
        for recorder in recorders:
            recorder.send_signal(signal.SIGINT)
        for recorder in recorders:
            recorder.wait(60)


# 1. Time to first token.


async def direct_model(model_url: str, message: str) -> tuple[float, float, int]:
    """(time to first content, tokens per second, tokens) straight from the model server."""
    body = {"model": "scripted", "messages": [{"role": "user", "content": message}], "stream": True}
    started = time.perf_counter()
    first = last = 0.0
    tokens = 0
    async with httpx.AsyncClient(timeout=60) as client, client.stream("POST", f"{model_url}/api/chat", json=body) as r:
        async for line in r.aiter_lines():
            if not line:
                continue
            chunk = json.loads(line)
            if chunk.get("message", {}).get("content"):
                now = time.perf_counter()
                first = first or now
                last = now
                tokens += 1
    return first - started, (tokens - 1) / (last - first) if tokens > 1 and last > first else float("nan"), tokens


async def via_orchestrator(url: str, message: str, run: int) -> tuple[float, float, int]:
    body = {"runId": f"bench-{run}-{time.time_ns()}", "sessionId": "bench-session", "message": message, "history": []}
    headers = {"Authorization": f"Bearer {token_for('bench-user', 'bench-session')}", "Accept": "text/event-stream"}
    started = time.perf_counter()
    first = last = 0.0
    tokens = 0
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", f"{url}/v1/runs", json=body, headers=headers) as response,
    ):
        event = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "content":
                now = time.perf_counter()
                first = first or now
                last = now
                tokens += 1
    return first - started, (tokens - 1) / (last - first) if tokens > 1 and last > first else float("nan"), tokens


async def via_ingress(base: str, message: str) -> tuple[float, float, int]:
    async with new_client() as client:
        result = await chat(client, base, message, timeout=60)
    assert result.complete, result.describe()
    contents = [e.at for e in result.events if e.event == "content"]
    rate = (len(contents) - 1) / (contents[-1] - contents[0]) if len(contents) > 1 else float("nan")
    return contents[0] - result.started, rate, len(contents)


async def bench_ttft(stack: PrivateStack, runs: int, profile: bool = False) -> list[str]:
    """Two tables: an answer streamed as fast as the model server can (what the path costs), and one
    paced like a real model (whether the path keeps up: the ratio should be 1.00x)."""
    fast = await _ttft_table(stack, runs, PLAIN, "as fast as the model server streams", profile)
    paced = await _ttft_table(stack, runs, PACED, f"paced at {PACED_PER_SECOND} deltas/s like a real model", False)
    return [*fast, "", *paced]


async def _ttft_table(stack: PrivateStack, runs: int, message: str, pace: str, profile: bool) -> list[str]:
    assert stack.orchestrator is not None
    Measure = Callable[[int], Awaitable[tuple[float, float, int]]]
    paths: dict[str, Measure] = {
        "model server (direct)": lambda i: direct_model(stack.model_url, message),
        "orchestrator /v1/runs": lambda i: via_orchestrator(stack.orchestrator.url, message, i),  # type: ignore[union-attr]
        "ingress + gateway + orchestrator": lambda i: via_ingress(stack.base_url, message),
    }
    figures: dict[str, tuple[list[float], list[float], int]] = {}
    for name, call in paths.items():
        for i in range(3):  # warm-up
            await call(-1 - i)
        ttfts, rates = [], []
        tokens = 0
        pids = {"gateway": stack.gateways[0].pid, "orchestrator": stack.orchestrator.pid}
        with profiled(pids, "ttft", profile and name.startswith("ingress")):
            for i in range(runs):  # one at a time: latency, not capacity
                ttft, rate, tokens = await call(i)
                ttfts.append(ttft)
                rates.append(rate)
        figures[name] = (ttfts, rates, tokens)
    direct_ttft, direct_rate, _ = figures["model server (direct)"]
    d50, d99, drate = percentile(direct_ttft, 0.5), percentile(direct_ttft, 0.99), percentile(direct_rate, 0.5)
    lines = [
        f"time to first token and token rate ({runs} runs each, one at a time; scripted answer of "
        f"{figures['model server (direct)'][2]} deltas, {pace})",
        f"{'path':36} {'TTFT p50':>10} {'TTFT p99':>10} {'added p50':>10} {'added p99':>10} {'tokens/s':>9} "
        f"{'ratio':>6}",
    ]
    for name, (ttfts, rates, _) in figures.items():
        p50, p99, rate = percentile(ttfts, 0.5), percentile(ttfts, 0.99), percentile(rates, 0.5)
        lines.append(
            f"{name:36} {ms(p50):>10} {ms(p99):>10} {ms(p50 - d50):>10} {ms(p99 - d99):>10} {rate:>9.0f} "
            f"{rate / drate:>5.2f}x"
        )
    if profile:
        for process in ("gateway", "orchestrator"):
            lines += ["", *summarise_profile(OUT / f"{process}-ttft.txt")]
    return lines


# 2. MCP tool call: pool over HTTP against in-process.


async def bench_tool_call(stack: PrivateStack, calls: int) -> list[str]:
    from mcp import Client

    from stacgis_common.auth import Identity, mint_for
    from stacgis_common.mcp_app import create_mcp_server
    from stacgis_orchestrator.settings import OrchestratorSettings
    from stacgis_orchestrator.tools.pool import ToolPool
    from stacgis_raster.app import build_service
    from stacgis_raster.metrics import TOOLS
    from stacgis_raster.settings import RasterSettings
    from stacgis_raster.tools import register_tools

    tool, arguments = "query_raster_point", {"collection_id": "luxembourg-dem", "lon": 6.13, "lat": 49.61}
    raster = stack.tools["raster"]
    settings = OrchestratorSettings(mcp_servers={"raster": f"{raster.url}/mcp"})
    token = mint_for(settings, Identity("bench-user", "bench-session"))
    pool = ToolPool(settings, lambda: {"Authorization": f"Bearer {token}"})
    await pool.start()
    registered = pool.get(tool)
    assert registered is not None, f"{tool} not listed by raster-tools"
    headers = {"Authorization": f"Bearer {token}"}
    http: list[float] = []
    for i in range(calls + 10):
        started = time.perf_counter()
        outcome = await pool.call(registered, arguments, headers)
        if i >= 10:
            http.append(time.perf_counter() - started)
        assert not outcome.is_error, outcome.text
    await pool.aclose()

    raster_settings = RasterSettings(stac_url=str(ROOT / ".local" / "data" / "stac" / "catalog.json"), port=1)
    service = build_service(raster_settings)
    # Counted like the service's own server, so that the comparison holds only the transport.
    server = create_mcp_server("raster-tools", raster_settings, tool_metrics=TOOLS)
    register_tools(server, service, raster_settings)
    local: list[float] = []
    async with Client(server) as client:
        for i in range(calls + 10):
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            if i >= 10:
                local.append(time.perf_counter() - started)
            assert not result.is_error, result.content
    await service.resolver.aclose()
    h50, h99, l50, l99 = (percentile(v, q) for v, q in ((http, 0.5), (http, 0.99), (local, 0.5), (local, 0.99)))
    return [
        f"MCP tool call {tool} ({calls} calls each, sequential)",
        f"{'path':44} {'p50':>9} {'p99':>9}",
        f"{'orchestrator tool pool -> raster-tools (HTTP)':44} {ms(h50):>9} {ms(h99):>9}",
        f"{'in-process (in-memory MCP client)':44} {ms(l50):>9} {ms(l99):>9}",
        f"{'overhead of the network hop':44} {ms(h50 - l50):>9} {ms(h99 - l99):>9}",
    ]


# 3 and 4. One gateway in front of the scripted orchestrator.


class GatewayRig:
    """A gateway process over private Redis/Postgres, in front of the gateway suite's scripted orchestrator."""

    def __init__(self, state_dir: Path, env: dict[str, str]) -> None:
        self.infra = Infra(state_dir)
        logs = state_dir / "logs" / f"{time.strftime('%Y%m%d-%H%M%S')}-bench"
        logs.mkdir(parents=True, exist_ok=True)
        orchestrator_port, gateway_port = free_port(), free_port()
        self.orchestrator = Proc(
            "scripted-orchestrator",
            [PYTHON, "-m", "gateway_test_orchestrator"],
            {"ORCH_PORT": str(orchestrator_port), "PYTHONPATH": str(GATEWAY_TESTS), "LOG_LEVEL": "WARNING"},
            orchestrator_port,
            logs,
        )
        base = {
            k: v
            for k, v in read_env_file(ROOT / "deploy" / "local" / "stack.env").items()
            if not k.endswith("_TRACE_FILE")
        }
        self.gateway = Proc(
            "gateway",
            [PYTHON, "-m", "stacgis_gateway"],
            {
                **base,
                "GATEWAY_PORT": str(gateway_port),
                "STACGIS_OWNER_DATABASE_URL": self.infra.pg_dsn,
                "GATEWAY_DATABASE_URL": self.infra.app_dsn,
                "GATEWAY_REDIS_URL": self.infra.redis_url,
                "GATEWAY_ORCHESTRATOR_URL": f"http://127.0.0.1:{orchestrator_port}",
                "GATEWAY_AUTH_MODE": "trusted-header",
                "GATEWAY_TRUSTED_USER_HEADER": "X-Forwarded-User",
                "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
                "GATEWAY_MAX_CONCURRENT_RUNS": "5000",
                "GATEWAY_LOG_LEVEL": "WARNING",
                **env,
            },
            gateway_port,
            logs,
            "/readyz",
        )

    def __enter__(self) -> GatewayRig:
        self.infra.up()
        # As deployed: the owner migrates, the gateway connects as the application role.
        self.infra.grant_app_role()
        run_as_owner("gateway migrations", [PYTHON, "-m", "stacgis_gateway.migrate"], self.gateway.env)
        self.orchestrator.start().wait_ready()
        self.gateway.start().wait_ready()
        return self

    def __exit__(self, *_: object) -> None:
        self.gateway.stop()
        self.orchestrator.stop()
        self.infra.down()

    def rss_mb(self) -> float:
        assert self.gateway.pid is not None
        return float(psutil.Process(self.gateway.pid).memory_info().rss) / 2**20


async def active_stream(client: httpx.AsyncClient, url: str, user: str, message: str) -> dict[str, Any]:
    """One run's SSE stream: (arrival, delay) per event, the delay being arrival - XADD time in the entry id."""
    arrivals: list[tuple[float, float]] = []
    outcome = "no final event"
    try:
        async with client.stream(
            "POST", f"{url}/api/v1/chat/stream", json={"message": message}, headers={"X-Forwarded-User": user}
        ) as response:
            if response.status_code != 200:
                await response.aread()
                return {"arrivals": arrivals, "outcome": f"HTTP {response.status_code}"}
            event_id = ""
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("event:"):
                    name = line[6:].strip()
                    now = time.time()
                    arrivals.append((now, now - int(event_id.partition("-")[0]) / 1000))
                    if name in ("done", "error"):
                        outcome = name
    except httpx.HTTPError as error:
        outcome = type(error).__name__
    return {"arrivals": arrivals, "outcome": outcome}


def all_open_delays(results: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Delays of the events that arrived while every stream was open (after the last one's first event,
    before the first one's last), and the most streams open at once.

    The streams start as fast as the gateway admits their runs, so with many of them the first runs may
    end before the last start: the all-open delays are those of the fan-out at the full count alone.
    """
    spans = [(r["arrivals"][0][0], r["arrivals"][-1][0]) for r in results if r["arrivals"]]
    if not spans:
        return [], 0
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    open_now = most = 0
    for _, step in edges:
        open_now += step
        most = max(most, open_now)
    first_end, last_start = min(end for _, end in spans), max(start for start, _ in spans)
    delays = [delay for r in results for at, delay in r["arrivals"] if last_start <= at <= first_end]
    return delays, most


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def bench_sse(rig: GatewayRig, levels: list[int], profile: bool) -> list[str]:
    url = rig.gateway.url
    # 40 deltas over 20 s: an event every 0.5 s per stream, like a model writing at a calm pace.
    message = "[deltas=40] [slow=20] " + "a steady stream of words for the fan-out benchmark " * 2
    lines = [
        "SSE fan-out of one gateway process (each run: an event every 0.5 s for 20 s; 'at once': most streams "
        "open together, 'all-open p95': delay while all were; CPU: share of one core over the row, and the "
        "gateway's CPU time per event delivered)",
        f"{'streams':>8} {'ok':>6} {'at once':>8} {'delay p50':>10} {'delay p95':>10} {'delay p99':>10} "
        f"{'all-open p95':>13} {'gap p95':>9} {'gateway CPU':>12} {'per event':>10} {'RSS':>7} "
        f"{'orchestrator':>13} {'client':>7}  failures",
    ]
    process = psutil.Process(rig.gateway.pid)
    # The scripted orchestrator and the streams' client share the machine: their load is in the delays.
    orchestrator = psutil.Process(rig.orchestrator.pid)
    client_process = psutil.Process()
    for level in levels:
        limits = httpx.Limits(max_connections=level + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(120, connect=30), limits=limits) as client:
            with profiled({"gateway": rig.gateway.pid}, f"sse-{level}", profile):
                for measured in (orchestrator, client_process):
                    measured.cpu_percent(None)
                gateway_cpu = cpu_seconds(process)
                started = time.monotonic()
                results = await asyncio.gather(
                    *(active_stream(client, url, f"sse-user-{i}", message) for i in range(level))
                )
                elapsed = time.monotonic() - started
                gateway_cpu = cpu_seconds(process) - gateway_cpu
                orchestrator_cpu, client_cpu = (m.cpu_percent(None) for m in (orchestrator, client_process))
        cpu = 100 * gateway_cpu / elapsed  # the share of one core, from the same CPU time as the per-event cost
        delays = [delay for r in results for _, delay in r["arrivals"]]
        gaps = [later - earlier for r in results for (earlier, _), (later, _) in pairwise(r["arrivals"])]
        all_open, at_once = all_open_delays(results)
        outcomes = Counter(r["outcome"] for r in results)
        ok = outcomes.pop("done", 0)
        failures = ", ".join(f"{count}x {name}" for name, count in outcomes.most_common(3)) or "-"
        per_event = f"{1e6 * gateway_cpu / max(len(delays), 1):.0f} us"
        lines.append(
            f"{level:>8} {ok:>6} {at_once:>8} {ms(percentile(delays, 0.5)):>10} {ms(percentile(delays, 0.95)):>10} "
            f"{ms(percentile(delays, 0.99)):>10} {ms(percentile(all_open, 0.95)) if all_open else '-':>13} "
            f"{ms(percentile(gaps, 0.95)):>9} {cpu:>10.0f} % {per_event:>10} {rig.rss_mb():>5.0f}MB "
            f"{orchestrator_cpu:>11.0f} % {client_cpu:>5.0f} %  {failures} ({elapsed:.0f} s)"
        )
        await asyncio.sleep(3)
    return lines


async def bench_idle(rig: GatewayRig, levels: list[int], hold_seconds: float, workers: int) -> list[str]:
    """Quiet runs (a slow model, an approval) held open by client worker processes that only count lines
    (idle_streams.py), so a stream reported as never pinged was not pinged by the gateway."""
    heartbeat = rig.gateway.env["GATEWAY_HEARTBEAT_SECONDS"]
    lines = [
        f"idle SSE streams held by one gateway process (quiet runs; heartbeat every {heartbeat} s, held "
        f"{hold_seconds:g} s; client: {workers} worker processes; first ping: seconds from the hold's start)",
        f"{'streams':>8} {'alive':>6} {'pinged':>7} {'never':>6} {'1st p50':>8} {'1st p95':>8} {'1st max':>8} "
        f"{'gateway CPU':>12} {'RSS':>7} {'per stream':>11} {'client CPU':>11} {'client RSS':>11} {'opened in':>10}"
        "  failures",
    ]
    process = psutil.Process(rig.gateway.pid)
    # What the first streams cost once (pools, caches, lazy imports) is no stream's own: warm up first.
    async with IdleClients(rig.gateway.url, "idle-warm-up-", 50, 1) as warm_up:
        await warm_up.open(timeout=120)
    await asyncio.sleep(5)
    baseline = rig.rss_mb()
    for level in levels:
        async with IdleClients(rig.gateway.url, f"idle-{level}-", level, workers) as clients:
            # Every stream must be open (its first event received) before the hold starts.
            await clients.open(timeout=120)
            process.cpu_percent(None)
            await clients.hold(hold_seconds)
            cpu, rss = process.cpu_percent(None), rig.rss_mb()
            seen = await clients.report()
        per_stream = (rss - baseline) * 1024 / max(seen.alive, 1)
        failed = ", ".join(f"{count}x {name}" for name, count in seen.failures.most_common(3)) or "-"
        per = f"{per_stream:>8.0f} KB" if per_stream > 0 else f"{'-':>11}"
        first = [f"{percentile(seen.first_ping, q):>6.2f} s" for q in (0.5, 0.95, 1.0)]
        lines.append(
            f"{level:>8} {seen.alive:>6} {seen.pinged:>7} {seen.never_pinged:>6} {' '.join(first)} {cpu:>10.0f} % "
            f"{rss:>5.0f}MB {per} {100 * seen.client_cpu:>9.1f} % {seen.client_rss_mb:>9.0f}MB "
            f"{seen.open_seconds:>8.1f} s  {failed}"
        )
        await asyncio.sleep(5)  # the gateway ends the closed streams' runs and frees their slots
        if seen.alive < level // 2:
            lines.append(f"(stopped: fewer than half of {level} streams stayed open)")
            break
    return lines


# Pass-through frames (the interpreter, the event loop, uvicorn, ASGI middleware chains) are left out.
PLUMBING = (
    "<frozen runpy>",
    "uvicorn/",
    "asyncio/runners.py",
    "asyncio/base_events.py",
    "asyncio/events.py",
    "__main__.py",
    "threading.py",
    "starlette/",
    "fastapi/",
    "anyio/",
    "contextlib.py",
    "Middleware.__call__",
    "cancel_on_finish",
    "retry.py",
)
IDLE = ("EpollSelector.select", "Condition.wait", "select (selectors")


def summarise_profile(path: Path, top: int = 14) -> list[str]:
    """Where a process spends its busy time, from py-spy's collapsed stacks: inclusive share per frame."""
    if not path.exists():
        return [f"(no profile at {path})"]
    inclusive: Counter[str] = Counter()
    busy = idle = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        if frames[-1].startswith(IDLE):
            idle += int(count)
            continue
        busy += int(count)
        for frame in set(frames):
            if not any(part in frame for part in PLUMBING):
                inclusive[frame] += int(count)
    lines = [f"profile {path.name}: busy {100 * busy / max(busy + idle, 1):.0f}% of samples; inclusive share of busy:"]
    for frame, samples in inclusive.most_common(top):
        lines.append(f"  {100 * samples / max(busy, 1):5.1f}%  {frame[:110]}")
    return lines


def machine() -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    return [
        f"machine: {os.cpu_count()} cores ({cpu}), {psutil.virtual_memory().total / 2**30:.1f} GiB RAM, "
        f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}"
    ]


async def main_async(args: argparse.Namespace) -> list[str]:
    parts = set(args.only.split(","))
    out = machine()
    if parts & {"ttft", "tools"}:
        options = StackOptions(
            trace_files=False,
            rules=reliability_rules(),
            env={
                "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
                "MODEL_SERVER_PRELOAD": "true",
                "GATEWAY_LOG_LEVEL": "WARNING",
                "ORCHESTRATOR_LOG_LEVEL": "WARNING",
            },
        )
        with private_stack(options) as stack:
            if "ttft" in parts:
                out += ["", *await bench_ttft(stack, args.runs, args.profile)]
            if "tools" in parts:
                out += ["", *await bench_tool_call(stack, args.tool_calls)]
    if parts & {"sse", "idle"}:
        with state_directory() as state, GatewayRig(state, {"GATEWAY_HEARTBEAT_SECONDS": "5"}) as rig:
            if "sse" in parts:
                out += ["", *await bench_sse(rig, [int(v) for v in args.streams.split(",")], args.profile)]
                if args.profile:
                    for level in args.streams.split(","):
                        out += ["", *summarise_profile(OUT / f"gateway-sse-{level}.txt")]
            if "idle" in parts:
                idle = [int(v) for v in args.idle.split(",")]
                out += ["", *await bench_idle(rig, idle, args.hold, args.idle_workers)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--tool-calls", type=int, default=200)
    parser.add_argument("--streams", default="100,500,1000")
    parser.add_argument("--idle", default="250,500,1000,2000")
    parser.add_argument("--hold", type=float, default=12.0, help="seconds the idle streams are held (>= 2 heartbeats)")
    parser.add_argument(
        "--idle-workers", type=int, default=2, help="client processes that hold the idle streams between them"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy the gateway (and orchestrator) while measuring")
    parser.add_argument("--only", default="ttft,tools,sse,idle")
    args = parser.parse_args()
    raise_fd_limit()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    lines = asyncio.run(main_async(args))
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
