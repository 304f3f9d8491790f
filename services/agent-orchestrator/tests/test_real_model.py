"""The embedded model (Qwen2.5-Coder-1.5B-Instruct through llama.cpp, behind the model server's Ollama
API) runs the whole loop with real MCP tool servers. Skipped only when the model file is absent."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from orchestrator_helpers import content, model_requests, run_events, terminal

from conftest import ToolServer, orchestrator, orchestrator_env
from stacgis_common.testing import RunningService
from stacgis_model_server.model_file import DEFAULT_MODEL_PATH, is_verified

REAL_MODEL = "qwen2.5-coder:1.5b"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or not is_verified(DEFAULT_MODEL_PATH),
    reason=f"llama-cpp-python or the verified model file {DEFAULT_MODEL_PATH} is missing (make setup builds both)",
)


@pytest.fixture(scope="module")
def real_model_orch(
    model_server: RunningService, redis_url: str, raster: ToolServer, memory: ToolServer
) -> Iterator[RunningService]:
    env = orchestrator_env(
        model_server.url,
        redis_url,
        {"raster": raster.mcp, "memory": memory.mcp},
        llm_model=REAL_MODEL,
        # The model server's default context; the first call reads the whole prompt cold.
        llm_num_ctx="16384",
        llm_max_output_tokens="256",
        llm_temperature="0",
        llm_timeout_seconds="900",
        always_include_frontend_tools="false",
        max_steps="3",
    )
    with orchestrator(env) as service:
        yield service


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_embedded_model_completes_a_run_with_well_formed_events(real_model_orch, model_url) -> None:
    message = "Hello! Which raster collections can you show me?"
    events = await run_events(real_model_orch.url, {"message": message}, timeout=1500)
    # run_events already parsed every event as stacgis.v1.AgentEvent with consecutive seq numbers.
    assert events[0].name == "run_started" and events[0].payload["model"] == REAL_MODEL
    done = terminal(events).proto.done
    assert done.finish_reason in ("completed", "step_budget")
    assert done.content.strip(), "the run must end with an answer"
    assert done.content == content(events)
    assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0
    requests = await model_requests(model_url, contains=message)
    assert len(requests) == done.steps
    assert all(r["model"] == REAL_MODEL and r["status"] == 200 and not r["client_disconnected"] for r in requests)
