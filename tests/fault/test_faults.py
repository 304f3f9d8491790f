"""Faults under steady load, one after the other, each repaired the way Kubernetes would (the process
is started again, the database comes back): SIGKILL of each tool server, of the orchestrator and of
one of two gateways; a Redis restart (its data gone); a Postgres crash and restart; a model server
that accepts requests and never answers. Then SIGKILL of the model server, Redis and Postgres as the
local stack runs them (under scripts/supervisor.py), with no repair at all: each must come back by
itself, and the "outage" column is the time until it answered again.

For each: no 5xx but 503 anywhere, every stream that started ends with a clean final event (`error`
events carry a code and a message; tool failures arrive as `tool_error` and the run still answers),
interrupted streams resume without gaps where their gateway survived, the readiness endpoints show
the fault and recover, no run a browser saw complete is missing from the history, the gate's slots
come back, and throughput returns to at least 80% of the baseline within a bound. Each fault's
recovery times are printed and written to .local/reliability/figures/faults.md.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator

import asyncpg
import httpx
import pytest
import redis
from fault_phase import RECOVERED_FRACTION, Fault, PhaseRecord, run_phase
from fault_settings import GATE, LLM_TIMEOUT_SECONDS, SLOT_TTL_SECONDS
from figures import figures, table
from private_stack import PrivateStack, Proc
from scripted_rules import stall_rule

STEADY_USERS = 6
STEADY_TAGS = ["load", "tool:raster", "tool:vector", "tool:knowledge", "tool:memory"]
# Error codes the gateway and orchestrator end a run with when a part of the system fails.


Action = Callable[[PrivateStack], object]


def kill_and_restart(name: str) -> tuple[Action, Action]:
    """SIGKILL the process; the repair starts it again on the same port (as a restarted pod)."""

    def find(stack: PrivateStack) -> Proc:
        return next(p for p in stack.processes() if p.name == name)

    return (lambda stack: find(stack).kill()), (lambda stack: find(stack).start().wait_ready(120))


def tool_fault(server: str) -> Fault:
    inject, repair = kill_and_restart(f"{server}-tools")
    return Fault(f"SIGKILL {server}-tools", inject, repair, unready=[f"{server}-tools"], probe_tags=(f"tool:{server}",))


def orchestrator_fault() -> Fault:
    inject, repair = kill_and_restart("orchestrator")
    return Fault("SIGKILL orchestrator", inject, repair, unready=["orchestrator", "gateway-1", "gateway-2"])


def gateway_fault() -> Fault:
    inject, repair = kill_and_restart("gateway-1")
    # Runs the dead replica owned are declared lost by the survivor once their heartbeat is SLOT_TTL old.
    return Fault(
        "SIGKILL gateway-1 (of 2)",
        inject,
        repair,
        unready=["gateway-1"],
        recovery_bound_seconds=30.0 + SLOT_TTL_SECONDS,
    )


def redis_fault() -> Fault:
    return Fault(
        "Redis restart (data lost)",
        lambda s: s.infra.kill_redis(),
        lambda s: s.infra.up(),
        unready=["gateway-1", "gateway-2", "orchestrator"],
    )


def postgres_fault() -> Fault:
    return Fault(
        "Postgres crash + restart",
        lambda s: s.infra.crash_postgres(),
        lambda s: s.infra.up(),
        unready=["gateway-1", "gateway-2", "vector-tools", "knowledge-tools", "memory-tools"],
    )


def answers(check: Callable[[PrivateStack], object]) -> Callable[[PrivateStack], bool]:
    def probe(stack: PrivateStack) -> bool:
        try:
            return bool(check(stack))
        except (OSError, asyncpg.PostgresError, redis.RedisError, httpx.HTTPError, TimeoutError):
            return False

    return probe


def postgres_answers(stack: PrivateStack) -> bool:
    async def query() -> object:
        connection = await asyncpg.connect(stack.infra.pg_dsn, timeout=2)
        try:
            return await connection.fetchval("SELECT 1")
        finally:
            await connection.close()

    return asyncio.run(query()) == 1


def supervised_kill_fault(name: str, check: Callable[[PrivateStack], object], unready: list[str]) -> Fault:
    """SIGKILL a process the local stack's supervisor runs; nothing repairs it but the supervisor."""

    def inject(stack: PrivateStack) -> None:
        os.kill(stack.supervised_pid(name), signal.SIGKILL)

    return Fault(
        f"SIGKILL {name} (supervised, back by itself)",
        inject,
        lambda stack: None,
        unready=unready,
        comes_back=answers(check),
    )


def model_stall_fault() -> Fault:
    return Fault(
        "model server stalls",
        lambda s: s.set_rules([stall_rule()], position="prepend"),
        lambda s: s.reset_rules(),
        outage_seconds=LLM_TIMEOUT_SECONDS + 3.0,
    )


FAULTS = {
    "raster": tool_fault("raster"),
    "vector": tool_fault("vector"),
    "knowledge": tool_fault("knowledge"),
    "memory": tool_fault("memory"),
    "orchestrator": orchestrator_fault(),
    "gateway": gateway_fault(),
    "redis": redis_fault(),
    "postgres": postgres_fault(),
    "model-stall": model_stall_fault(),
    "model-server-sigkill": supervised_kill_fault(
        "model-server", lambda s: httpx.get(f"{s.model_url}/readyz", timeout=2).status_code == 200, ["model-server"]
    ),
    "redis-sigkill": supervised_kill_fault(
        "redis", lambda s: redis.Redis.from_url(s.infra.redis_url, socket_timeout=2).ping(), []
    ),
    "postgres-sigkill": supervised_kill_fault("postgres", postgres_answers, []),
}
# Faults after which Redis has lost its data (runs' streams included: resuming one says 404).
REDIS_LOST = ("redis", "redis-sigkill")


@pytest.fixture(scope="module")
def recovery_table(request: pytest.FixtureRequest) -> Iterator[list[PhaseRecord]]:
    """Collects every phase; at the end writes the recovery table (terminal summary and figures file)."""
    records: list[PhaseRecord] = []
    yield records
    rows = []
    for record in records:
        ready = [record.first_ready_after(p, record.repaired) for p in record.fault.unready]
        ready_s = max((r - record.repaired for r in ready if r is not None), default=0.0)
        clean = record.clean_again_at()
        back = record.throughput_back_at()
        rows.append(
            [
                record.fault.name,
                f"{record.repaired - record.injected:.1f} s",
                f"{ready_s:.1f} s" if record.fault.unready else "-",
                f"{clean - record.repaired:.1f} s" if clean else "not within bound",
                f"{back - record.repaired:.1f} s" if back else "not within bound",
                f"{record.baseline_per_s:.2f}",
                sum(1 for c in record.conversations if c.final is not None and c.final.event == "error"),
                sum(1 for c in record.conversations if any(e.event == "tool_error" for e in c.events)),
                sum(1 for c in record.conversations if c.resumed),
            ]
        )
    figures(request.config).add(
        "faults",
        f"Fault recovery under steady load ({STEADY_USERS} browsers + a probe every 0.5 s); times from the repair",
        table(
            [
                "fault",
                "outage",
                "ready again",
                "probes clean again",
                f"throughput ≥{RECOVERED_FRACTION:.0%}",
                "runs/s before",
                "error runs",
                "runs with tool_error",
                "resumed streams",
            ],
            rows,
        ),
    )


def phase_problems(record: PhaseRecord, name: str) -> list[str]:
    fault = record.fault
    problems: list[str] = []
    for conversation in record.conversations:
        label = f"{conversation.first.message!r}"
        for attempt in conversation.attempts:
            # A request the ingress had already passed to the replica that was killed gets the ingress's 502.
            in_flight = name == "gateway" and attempt.status == 502 and attempt.started <= record.injected + 0.5
            if attempt.status is not None and attempt.status >= 500 and attempt.status != 503 and not in_flight:
                problems.append(f"{label}: HTTP {attempt.status} on {attempt.kind}: {str(attempt.body)[:200]}")
        started = conversation.first.status == 200
        # Cut off by the kill before its first event: the browser never learnt the run id, so it cannot
        # resume (it shows the broken connection and the user sends again), like the ingress's 502.
        cut_off = (
            name == "gateway"
            and not conversation.events
            and conversation.first.started <= record.injected + 0.5
            and conversation.first.ended >= record.injected
        )
        if started and conversation.final is None and not cut_off:
            gone = any(a.status == 404 for a in conversation.attempts[1:])
            if not (name in REDIS_LOST and gone):  # Redis lost the run's stream: resuming says 404
                problems.append(f"{label}: no final event: {[a.describe() for a in conversation.attempts][-3:]}")
        final = conversation.final
        if final is not None and final.event == "error":
            error = final.data.get("error") or {}
            if not error.get("code") or not error.get("message"):
                problems.append(f"{label}: an error event without code or message: {error}")
        if started and conversation.first.failure and name != "gateway" and not conversation.first.events:
            problems.append(f"{label}: the request itself failed: {conversation.first.failure}")
        gaps = conversation.gaps()
        if gaps:
            problems.append(f"{label}: resumed stream has gaps or repeats: {gaps[:3]}")
        for event in conversation.events:
            tool_error = event.data.get("toolError") or {}
            if event.event == "tool_error" and not (tool_error.get("error") and tool_error.get("kind")):
                problems.append(f"{label}: tool_error without an error text and kind: {event.data}")
    # Streams broken on purpose must resume to their end wherever their gateway lived on.
    if name not in ("gateway", *REDIS_LOST):
        for probe in record.probes:
            if probe.resumed and probe.final is None:
                problems.append(f"probe {probe.first.message!r} could not be resumed to its end")
    for process in fault.unready:
        during = record.readiness_during(process, record.injected + 1.0, record.repaired)
        if during and all(during):
            problems.append(f"{process} stayed ready during the fault")
        if record.first_ready_after(process, record.repaired) is None:
            problems.append(f"{process} never became ready again after the repair")
    if record.clean_again_at() is None:
        problems.append(f"probes did not become clean again within {fault.recovery_bound_seconds:g} s of the repair")
    return problems


def completed_runs_lost(stack: PrivateStack, record: PhaseRecord) -> list[str]:
    done = {
        str(c.first.run_id): c
        for c in record.conversations
        if c.first.run_id and c.final is not None and c.final.event == "done"
    }

    async def stored() -> set[str]:
        connection = await asyncpg.connect(stack.infra.pg_dsn)
        try:
            rows = await connection.fetch(
                "SELECT run_id FROM gateway.runs WHERE run_id = ANY($1::text[]) AND outcome = 'done'", list(done)
            )
        finally:
            await connection.close()
        return {row["run_id"] for row in rows}

    return sorted(set(done) - asyncio.run(stored()))


def slots_in_use(stack: PrivateStack) -> int:
    """Slots in use as the capacity endpoint reports them (it prunes slots of dead replicas first)."""
    try:
        return int(httpx.get(f"{stack.base_url}/api/v1/chat/capacity", timeout=5).json()["active"])
    except (httpx.HTTPError, ValueError, KeyError):
        return -1


@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_is_survived_and_recovered(
    name: str, fault_stack: PrivateStack, recovery_table: list[PhaseRecord]
) -> None:
    record = asyncio.run(run_phase(fault_stack, FAULTS[name], STEADY_USERS, STEADY_TAGS))
    recovery_table.append(record)
    problems = phase_problems(record, name)
    if record.baseline_per_s <= 0:
        problems.append("nothing completed before the fault: the steady load never ran")
    elif record.throughput_back_at() is None:
        problems.append(
            f"throughput not back to {RECOVERED_FRACTION:.0%} of {record.baseline_per_s:.2f} runs/s within "
            f"{FAULTS[name].recovery_bound_seconds:g} s of the repair"
        )
    lost = completed_runs_lost(fault_stack, record)
    if lost:
        problems.append(f"{len(lost)} runs a browser saw complete are missing from the history: {lost[:5]}")
    # Slots: every run is over, so the gate must empty (a dead replica's slots are pruned after the slot TTL).
    deadline = time.monotonic() + SLOT_TTL_SECONDS + 5
    while (held := slots_in_use(fault_stack)) and time.monotonic() < deadline:
        time.sleep(0.5)
    if held:
        problems.append(f"{held} gate slots still held (limit {GATE}) after the phase")
    assert not problems, f"{FAULTS[name].name}: {len(problems)} problems:\n" + "\n".join(problems[:25])
