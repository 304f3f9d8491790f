"""A tool server dies in the middle of a run: the user sees the failed call, still gets an answer,
and once the server is back (restarted by its Procfile process, as a kubelet would) runs work again."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from stacgis_common.testing import token_for

from .client import ORCHESTRATOR, RASTER_TOOLS, ChatUser, ScriptedModel, nonce, wait_until
from .conftest import require
from .processes import listener_pid, supervised_pid, supervisor_alive
from .sse import SSEEvent
from .test_zonal_statistics import elevation_rules

RASTER_PORT = 8011
# The restarted server must be serving again within this (interpreter start, catalog load).
RESTART_TIMEOUT = 120.0


def failing_rules(tag: str) -> list[dict[str, object]]:
    """Search, then (slowly, so the kill lands first) zonal statistics, then answer whatever came back."""
    rules = elevation_rules(tag)
    by_name = {str(rule["name"]): rule for rule in rules}
    by_name[f"{tag}-zonal"].update(thinking="Now the statistics over the country.", chunk_chars=4, delay_ms=120)
    answer: dict[str, object] = {
        "name": f"{tag}-answer-anyway",
        "match": {"last_user": tag, "last_tool": "compute_zonal_stats"},
        "content": "The elevation service failed, so I cannot give Luxembourg's mean elevation right now.",
    }
    return [answer, by_name[f"{tag}-zonal"], by_name[f"{tag}-search"]]


async def raster_ready() -> bool:
    async with httpx.AsyncClient() as http:
        try:
            return (await http.get(f"{RASTER_TOOLS}/readyz", timeout=3.0)).status_code == 200
        except httpx.HTTPError:
            return False


async def raster_breaker_state() -> str:
    async with httpx.AsyncClient() as http:
        response = await http.get(
            f"{ORCHESTRATOR}/v1/tools", headers={"Authorization": f"Bearer {token_for('e2e-observer')}"}, timeout=10.0
        )
    response.raise_for_status()
    servers = {server["name"]: server for server in response.json().get("servers", [])}
    assert "raster" in servers, f"the orchestrator knows no raster server: {list(servers)}"
    return str(servers["raster"].get("breakerState", "closed"))


@pytest.mark.asyncio
async def test_raster_tools_killed_mid_run_gives_a_tool_error_an_answer_and_recovers(
    user: ChatUser, scripted: ScriptedModel, tag: str
) -> None:
    await require("vector-tools", "raster-tools")
    victim = supervised_pid("raster-tools")
    assert victim is not None and supervisor_alive("raster-tools"), (
        "raster-tools was not started by scripts/stack.py (no .local/run/raster-tools.pid with a live "
        "supervisor), so nothing would restart it: start the stack with `make up`"
    )
    assert listener_pid(RASTER_PORT) == victim, f"pid {victim} does not serve 127.0.0.1:{RASTER_PORT}"
    await scripted.add(*failing_rules(tag))
    killed_at: list[float] = []

    async def kill_after_search(event: SSEEvent) -> None:
        if event.event == "tool_result" and event.payload()["toolName"] == "search_vector_features":
            os.kill(victim, signal.SIGKILL)
            killed_at.append(time.monotonic())

    try:
        run = await user.chat(f"What is the mean elevation of Luxembourg? [{tag}]", on_event=kill_after_search)
        assert killed_at, run.describe()

        errors = run.tools("tool_error")
        assert [e["toolName"] for e in errors] == ["compute_zonal_stats"], run.describe()
        assert errors[0]["kind"] in {"unavailable", "tool_failed", "timeout"}, errors[0]
        assert not [r for r in run.tools("tool_result") if r["toolName"] == "compute_zonal_stats"]
        done = run.done()  # a final answer all the same, not an error event
        assert "failed" in done["content"] and run.content == done["content"]
    finally:
        # Leave the stack as it was: its Procfile process restarts raster-tools.
        await wait_until(raster_ready, "raster-tools restarted by its Procfile process", RESTART_TIMEOUT)

    restarted = supervised_pid("raster-tools")
    assert restarted is not None and restarted != victim and listener_pid(RASTER_PORT) == restarted

    # The orchestrator stops calling a server that failed repeatedly until its breaker lets a probe through.
    async def breaker_allows() -> bool:
        return await raster_breaker_state() != "open"

    await wait_until(breaker_allows, "the orchestrator's raster breaker to let calls through", 90, interval=1.0)

    again = nonce()
    await scripted.add(*elevation_rules(again))
    recovered = await user.chat(f"What is the mean elevation of Luxembourg? [{again}]")
    recovered.done()
    assert not recovered.of("tool_error"), recovered.describe()
    results = [r["toolName"] for r in recovered.tools("tool_result")]
    assert results == ["search_vector_features", "compute_zonal_stats"], recovered.describe()
    assert "The mean elevation of Luxembourg is" in recovered.content
