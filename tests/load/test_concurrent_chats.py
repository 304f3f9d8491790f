"""Many concurrent chats through the ingress: every request ends in a whole answer or a documented
503 + Retry-After (never a 500 or a hang), the gate never admits more than its limit, every completed
run is in the Postgres history exactly once, and afterwards the gate is empty again.

The stack is private (tests/load/private_stack.py): nginx from the `make up` template in front of a
gateway, the orchestrator, the four tool servers and the scripted model server, on free ports.
Scale: STACGIS_LOAD_USERS (default 200) browsers for STACGIS_LOAD_SECONDS (default 40) against a
gate of STACGIS_LOAD_GATE (default 20) slots.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
import redis

sys.path.insert(0, str(Path(__file__).parent))

from chat_client import chat, new_client
from figures import figures, table
from loadgen import LoadRun, run_load
from private_stack import PrivateStack, StackOptions, private_stack
from scripted_rules import reliability_rules

USERS = int(os.environ.get("STACGIS_LOAD_USERS", "200"))
SECONDS = float(os.environ.get("STACGIS_LOAD_SECONDS", "40"))
GATE = int(os.environ.get("STACGIS_LOAD_GATE", "20"))
REQUEST_TIMEOUT = 120.0
GATE_KEY = "chat:active_slots"


@pytest.fixture(scope="module")
def stack() -> Iterator[PrivateStack]:
    options = StackOptions(
        rules=reliability_rules(),
        env={
            "GATEWAY_MAX_CONCURRENT_RUNS": str(GATE),
            # Hundreds of new browsers from one address: the per-address limit on requests without an
            # identity would (rightly) refuse most of them, which is not what this test measures.
            "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
            "MODEL_SERVER_PRELOAD": "true",
            "GATEWAY_LOG_LEVEL": "WARNING",
            "ORCHESTRATOR_LOG_LEVEL": "WARNING",
        },
    )
    with private_stack(options) as running:
        yield running


@pytest.fixture(scope="module")
def load_run(stack: PrivateStack, request: pytest.FixtureRequest) -> LoadRun:
    async def warm_up_then_load() -> LoadRun:
        async with new_client() as client:  # first run pays for cold caches (tool list, embeddings)
            warm = await chat(client, stack.base_url, "[load] warm up", timeout=REQUEST_TIMEOUT)
            assert warm.complete, f"warm-up run failed: {warm.describe()}\n{stack.failure_logs()}"
        return await run_load(
            stack.base_url,
            USERS,
            SECONDS,
            lambda user, n: f"[load] user {user} message {n}: how high is the ground here?",
            timeout=REQUEST_TIMEOUT,
            redis_url=stack.infra.redis_url,
            gate_key=GATE_KEY,
        )

    run = asyncio.run(warm_up_then_load())
    numbers = run.summary()
    figures(request.config).add(
        "load",
        f"Load: {USERS} browsers for {SECONDS:g} s through the ingress, gate of {GATE}",
        table(
            [
                "requests",
                "completed",
                "503 + Retry-After",
                "other",
                "runs/s",
                "TTFT p50",
                "TTFT p95",
                "run p50",
                "run p95",
                "max gate seen",
            ],
            [
                [
                    numbers["requests"],
                    numbers["completed"],
                    numbers["refused_503"],
                    numbers["other"],
                    f"{numbers['runs_per_s']:.2f}",
                    f"{numbers['ttft_p50_s']:.2f} s",
                    f"{numbers['ttft_p95_s']:.2f} s",
                    f"{numbers['run_p50_s']:.2f} s",
                    f"{numbers['run_p95_s']:.2f} s",
                    numbers["max_gate"],
                ]
            ],
        ),
    )
    return run


def test_every_request_is_a_whole_answer_or_a_503_with_retry_after(load_run: LoadRun, stack: PrivateStack) -> None:
    statuses = Counter(r.status for r in load_run.results)
    bad = [r.describe() for r in load_run.other]
    assert not bad, f"{len(bad)} requests neither completed nor were refused cleanly ({statuses}):\n" + "\n".join(
        bad[:15]
    )
    assert load_run.completed, "no run completed"
    assert load_run.refused, f"the gate never refused anyone with {USERS} browsers and {GATE} slots: {statuses}"
    for refusal in load_run.refused:
        assert refusal.body.get("max") == GATE, refusal.body
        assert int(str(refusal.retry_after)) > 0


def test_the_gate_never_admits_more_than_its_limit(load_run: LoadRun) -> None:
    assert len(load_run.gate_samples) > SECONDS * 5, "the gate was hardly sampled"
    assert load_run.max_gate <= GATE, f"the gate held {load_run.max_gate} slots (limit {GATE})"
    assert load_run.max_gate >= GATE // 2, f"the load never filled the gate (at most {load_run.max_gate} slots)"


def test_every_completed_run_is_in_the_history_exactly_once(load_run: LoadRun, stack: PrivateStack) -> None:
    completed = {str(r.run_id): r for r in load_run.completed}
    assert len(completed) == len(load_run.completed), "two streams reported the same run id"

    async def fetch() -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
        connection = await asyncpg.connect(stack.infra.pg_dsn)
        try:
            runs = await connection.fetch(
                "SELECT run_id, outcome FROM gateway.runs WHERE run_id = ANY($1::text[])", list(completed)
            )
            messages = await connection.fetch(
                "SELECT run_id, role, content FROM gateway.messages WHERE run_id = ANY($1::text[]) ORDER BY id",
                list(completed),
            )
        finally:
            await connection.close()
        return runs, messages

    runs, messages = asyncio.run(fetch())
    counts = Counter(row["run_id"] for row in runs)
    missing = sorted(set(completed) - set(counts))
    assert not missing, f"{len(missing)} completed runs are not in gateway.runs: {missing[:5]}"
    assert all(row["outcome"] == "done" for row in runs), Counter(row["outcome"] for row in runs)
    by_run: dict[str, list[asyncpg.Record]] = {}
    for row in messages:
        by_run.setdefault(row["run_id"], []).append(row)
    wrong = []
    for run_id, result in completed.items():
        stored = by_run.get(run_id, [])
        users = [m["content"] for m in stored if m["role"] == "user"]
        answers = [m["content"] for m in stored if m["role"] == "assistant" and m["content"]]
        if users != [result.message] or answers[-1:] != [result.content]:
            wrong.append(f"{run_id}: user messages {len(users)}, answers {len(answers)}")
    assert not wrong, f"{len(wrong)} runs stored wrongly (each needs its message once and its answer):\n" + "\n".join(
        wrong[:10]
    )


def test_the_gate_is_empty_again_afterwards(load_run: LoadRun, stack: PrivateStack) -> None:
    client = redis.Redis.from_url(stack.infra.redis_url)
    deadline = time.monotonic() + 15
    try:
        while (held := int(client.zcard(GATE_KEY))) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        client.close()
    assert held == 0, f"{held} gate slots still held after every request finished"
    capacity = httpx.get(f"{stack.base_url}/api/v1/chat/capacity", timeout=10).json()
    assert capacity == {"active": 0, "max": GATE, "available": GATE}
