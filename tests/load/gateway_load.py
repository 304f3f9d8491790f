"""Load the chat gateway with concurrent streamed runs and print what happened.

Against a running stack (`make up`; the gateway behind the ingress, anonymous auth):

    .venv/bin/python tests/load/gateway_load.py --url http://127.0.0.1:8080 --requests 50

Or self-contained: two gateway processes with a gate of 10 in front of the scripted orchestrator of the
gateway tests, on free ports, over the local Postgres and Redis (`make infra-up`):

    .venv/bin/python tests/load/gateway_load.py --spawn --requests 200 --gate 10

Each virtual user sends one message and reads the SSE stream to its end. Every request is bounded
(--timeout) and the run stops by itself; traffic goes to loopback only. Figures, not thresholds:
the pass/fail checks of the gate live in services/chat-gateway/tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
GATEWAY_TESTS = ROOT / "services" / "chat-gateway" / "tests"
TLS = ssl.create_default_context()


@dataclass
class Outcome:
    status: int
    first_event: float | None = None
    first_token: float | None = None
    finished: float | None = None
    final: str | None = None
    events: int = 0
    error: str | None = None


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    peak_active: int | None = None
    wall: float = 0.0


async def one_run(url: str, message: str, headers: dict[str, str], timeout: float) -> Outcome:
    body = {"message": message, "session_id": None, "spatial_context": None}
    # One client per virtual user: its own cookie jar, so anonymous mode sees distinct users.
    # The TLS context is shared: building one per client would dominate the figures.
    async with httpx.AsyncClient(timeout=timeout, verify=TLS) as client:
        started = time.perf_counter()
        try:
            async with client.stream("POST", f"{url}/api/v1/chat/stream", json=body, headers=headers) as response:
                outcome = Outcome(response.status_code)
                if response.status_code != 200:
                    await response.aread()
                    return outcome
                event = None
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:"):
                        now = time.perf_counter() - started
                        outcome.events += 1
                        outcome.first_event = outcome.first_event or now
                        if event == "content" and outcome.first_token is None:
                            outcome.first_token = now
                        if event in ("done", "error"):
                            outcome.final = event
                            outcome.finished = now
                            break
                return outcome
        except httpx.HTTPError as error:
            return Outcome(0, error=f"{type(error).__name__}")


async def watch_gate(redis_url: str, key: str, started: asyncio.Event, stop: asyncio.Event, report: Report) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=10, socket_timeout=10)
    await client.ping()  # connect before the load starts competing for the event loop
    started.set()
    peak = 0
    try:
        while not stop.is_set():
            peak = max(peak, int(await client.zcard(key)))
            await asyncio.sleep(0.02)
    finally:
        report.peak_active = peak
        await client.aclose()


async def load(args: argparse.Namespace, urls: list[str], redis_url: str | None, gate_key: str) -> Report:
    report = Report()
    stop = asyncio.Event()
    watching = asyncio.Event()
    watcher = asyncio.create_task(watch_gate(redis_url, gate_key, watching, stop, report)) if redis_url else None
    if watcher:
        await asyncio.wait([watcher, asyncio.create_task(watching.wait())], return_when=asyncio.FIRST_COMPLETED)
    semaphore = asyncio.Semaphore(args.concurrency)

    async def user(index: int) -> Outcome:
        headers = {args.user_header: f"load-{uuid.uuid4().hex[:8]}"} if args.user_header else {}
        async with semaphore:
            return await one_run(urls[index % len(urls)], args.message, headers, args.timeout)

    started = time.perf_counter()
    report.outcomes = await asyncio.gather(*(user(i) for i in range(args.requests)))
    report.wall = time.perf_counter() - started
    stop.set()
    if watcher:
        await watcher
    return report


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms"
    )


def print_report(report: Report, args: argparse.Namespace) -> None:
    statuses = Counter(outcome.status for outcome in report.outcomes)
    admitted = [o for o in report.outcomes if o.status == 200]
    finals = Counter(o.final for o in admitted)
    rows = [
        ("requests", f"{args.requests} (at most {args.concurrency} at once)"),
        ("wall time", f"{report.wall:.2f} s"),
        ("admitted (200)", str(statuses.get(200, 0))),
        ("gate full (503)", str(statuses.get(503, 0))),
        ("rate limited (429)", str(statuses.get(429, 0))),
        ("other statuses", json.dumps({str(k): v for k, v in statuses.items() if k not in (200, 503, 429)})),
        ("runs ended done/error", f"{finals.get('done', 0)} / {finals.get('error', 0)}"),
        ("first event", quantiles([o.first_event for o in admitted if o.first_event])),
        ("first token", quantiles([o.first_token for o in admitted if o.first_token])),
        ("whole run", quantiles([o.finished for o in admitted if o.finished])),
        ("events per run", f"{statistics.mean([o.events for o in admitted]):.1f}" if admitted else "-"),
    ]
    if report.peak_active is not None:
        rows.append(("peak active slots (Redis)", str(report.peak_active)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


@contextlib.contextmanager
def spawned(args: argparse.Namespace) -> Iterator[tuple[list[str], str, str]]:
    """A scripted orchestrator and two gateways on free ports (the gateway tests' own processes)."""
    sys.path.insert(0, str(GATEWAY_TESTS))
    from gateway_helpers import gateway_env

    from stacgis_common.testing import free_port, grant_app_role, run_migrations, run_service

    redis_url = args.redis_url or "redis://127.0.0.1:56379/0"
    admin_dsn = args.database_url or "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis"
    # A scratch database and a key prefix of its own: the load leaves nothing in the dev stack's data.
    scratch = f"load_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(admin_dsn, f'CREATE DATABASE "{scratch}"'))
    owner_dsn = f"{admin_dsn.rsplit('/', 1)[0]}/{scratch}"
    prefix = f"load-{uuid.uuid4().hex[:6]}:"
    orchestrator_port, port_a, port_b = free_port(), free_port(), free_port()
    orchestrator_env = {"ORCH_PORT": str(orchestrator_port), "PYTHONPATH": str(GATEWAY_TESTS)}
    settings = {
        "GATEWAY_REDIS_KEY_PREFIX": prefix,
        "GATEWAY_MAX_CONCURRENT_RUNS": str(args.gate),
        "GATEWAY_HEARTBEAT_SECONDS": "15",
    }
    orchestrator_url = f"http://127.0.0.1:{orchestrator_port}"
    try:
        # As deployed: the owner migrates, the gateways connect as the application role.
        dsn = grant_app_role(owner_dsn)
        run_migrations("stacgis_gateway", {"GATEWAY_DATABASE_URL": owner_dsn})
        with (
            run_service("gateway_test_orchestrator", orchestrator_env, orchestrator_port),
            run_service(
                "stacgis_gateway", gateway_env(port_a, dsn, redis_url, orchestrator_url, **settings), port_a
            ) as a,
            run_service(
                "stacgis_gateway", gateway_env(port_b, dsn, redis_url, orchestrator_url, **settings), port_b
            ) as b,
        ):
            yield [a.url, b.url], redis_url, f"{prefix}chat:active_slots"
    finally:
        asyncio.run(_admin(admin_dsn, f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)'))


async def _admin(dsn: str, sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", action="append", help="gateway or ingress base URL (repeat for several replicas)")
    parser.add_argument("--spawn", action="store_true", help="start two gateways and a scripted orchestrator")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=200, help="requests in flight at most")
    parser.add_argument("--gate", type=int, default=10, help="gate size of the spawned gateways")
    parser.add_argument(
        "--message",
        default="[slow=2][deltas=8] How high is the terrain here?",
        help="message to send (the scripted orchestrator reads [slow=S][deltas=N] directives)",
    )
    parser.add_argument("--user-header", help="send a random user id in this header (trusted-header mode)")
    parser.add_argument("--redis-url", help="Redis to sample the gate from (spawned: a scratch db)")
    parser.add_argument("--gate-key", default="chat:active_slots", help="the gate's sorted set (with any prefix)")
    parser.add_argument("--database-url", help="Postgres for the spawned gateways")
    parser.add_argument("--timeout", type=float, default=120.0, help="per request, seconds")
    args = parser.parse_args()
    args.requests = max(1, min(args.requests, 2000))  # bounded by design
    args.concurrency = max(1, min(args.concurrency, args.requests))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    if args.spawn:
        args.user_header = args.user_header or "X-Forwarded-User"
        with spawned(args) as (urls, redis_url, gate_key):
            report = asyncio.run(load(args, urls, redis_url, gate_key))
    else:
        urls = [url.rstrip("/") for url in (args.url or ["http://127.0.0.1:8080"])]
        report = asyncio.run(load(args, urls, args.redis_url, args.gate_key))
    print_report(report, args)


if __name__ == "__main__":
    main()
