"""One run with the embedded model (Qwen2.5-Coder-1.5B-Instruct through the local model server): every
event is a well-formed stacgis.v1.AgentEvent and the run ends with `done`.

The gateway does not let a browser pick the model, so this run goes to the orchestrator directly
(RunRequest.options.model) with an internal token, as the gateway would send it.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from google.protobuf import json_format

from stacgis_common.testing import token_for
from stacgis_proto.v1 import events_pb2

from .client import ORCHESTRATOR, ScriptedModel
from .conftest import require
from .sse import TERMINAL, RunStream, iter_sse

REAL_MODEL = "qwen2.5-coder:1.5b"
# A cold server reads the whole system prompt with every tool first: minutes on 2 cores.
RUN_TIMEOUT = 900.0


@pytest.mark.asyncio
async def test_a_run_with_the_embedded_model_streams_well_formed_events_ending_with_done(
    scripted: ScriptedModel, tag: str
) -> None:
    await require(scripted=False)
    session_id = str(uuid.uuid4())
    body = {
        "sessionId": session_id,
        "message": f"Say hello to the user in one short sentence. ({tag})",
        "history": [],
        "options": {"model": REAL_MODEL, "maxSteps": 2},
    }
    headers = {"Authorization": f"Bearer {token_for('e2e-real-model', session_id)}"}
    run = RunStream()
    async with (
        asyncio.timeout(RUN_TIMEOUT),
        httpx.AsyncClient(timeout=httpx.Timeout(RUN_TIMEOUT, connect=5.0)) as http,
        http.stream("POST", f"{ORCHESTRATOR}/v1/runs", json=body, headers=headers) as response,
    ):
        async for event in iter_sse(response):
            run.add(event)
            if event.event in TERMINAL:
                break

    parsed = []
    for event in run.events:
        message = events_pb2.AgentEvent()
        json_format.Parse(event.data, message)  # raises on any field the contract does not have
        assert message.WhichOneof("payload") is not None, event.data
        parsed.append(message)
    assert run.final.event == "done", run.describe()
    assert [m.seq for m in parsed] == list(range(1, len(parsed) + 1))
    assert {m.run_id for m in parsed} == {parsed[0].run_id}
    assert parsed[0].WhichOneof("payload") == "run_started" and parsed[0].run_started.model == REAL_MODEL
    assert sum(m.WhichOneof("payload") in ("done", "error") for m in parsed) == 1
    assert parsed[-1].done.finish_reason in {"completed", "step_budget"}

    # The model server's record shows the real model answered, not the scripted back end.
    requests = await scripted.requests(tag)
    assert requests, "the model server recorded no request of this run"
    assert {r["model"] for r in requests} == {REAL_MODEL}
    outcomes = [(r["backend"], r["outcome"], r["duration_ms"]) for r in requests]
    assert all(b != "scripted" and o == "completed" for b, o, _ in outcomes), f"{outcomes}\n{run.describe()}"
