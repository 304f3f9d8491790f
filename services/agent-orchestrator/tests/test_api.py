"""The HTTP surface: tool listing and selection, request validation, auth, health, metrics, traces."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import httpx
import pytest
from orchestrator_helpers import auth, content, run_events, set_rules, terminal

from conftest import orchestrator, orchestrator_env
from stacgis_common.testing import error_of, free_port, run_service


def test_tools_lists_every_tool_with_server_schema_and_flags(orch) -> None:
    response = httpx.get(orch.url + "/v1/tools", headers=auth())
    assert response.status_code == 200
    body = response.json()
    tools = {tool["name"]: tool for tool in body["tools"]}
    stats = tools["get_raster_statistics"]
    assert stats["server"] == "raster" and stats["kind"] == "mcp" and stats["readOnly"] is True
    assert stats["inputSchema"]["properties"]["bbox"]["type"] == "array"
    assert "bbox" in stats["inputSchema"]["required"]
    assert tools["save_note"].get("requiresApproval") is True, "approval by configuration"
    assert tools["delete_collection"].get("requiresApproval") is True, "approval by x_requires_approval in its schema"
    assert not tools["query_raster_point"].get("requiresApproval")
    assert tools["vector__whoami"]["server"] == "vector"
    assert tools["generate_chart"]["kind"] == "frontend" and "server" not in tools["generate_chart"]
    assert tools["list_available_tools"]["kind"] == "builtin"
    servers = {server["name"]: server for server in body["servers"]}
    assert set(servers) == {"raster", "vector", "memory"}
    assert servers["raster"]["breakerState"] == "closed"
    assert servers["raster"]["toolCount"] == 8


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is the mean NDVI inside this bounding box?", "get_raster_statistics"),
        ("Find the city of Berlin", "search_vector_features"),
        ("Which raster datasets are there?", "list_raster_collections"),
    ],
)
def test_select_ranks_the_right_tool_first(orch, query: str, expected: str) -> None:
    response = httpx.get(orch.url + "/v1/tools/select", params={"q": query, "k": 3}, headers=auth(), timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    ranked = [tool for tool in body["tools"] if not tool.get("alwaysIncluded")]
    assert body["k"] == 3 and len(ranked) == 3
    assert ranked[0]["name"] == expected, ranked
    assert ranked[0]["score"] >= ranked[1]["score"] >= ranked[2]["score"]
    assert abs(ranked[0]["score"] - ranked[0]["similarity"] - ranked[0].get("keywordScore", 0)) < 1e-5
    always = {tool["name"] for tool in body["tools"] if tool.get("alwaysIncluded")}
    assert {"zoom_to_location", "generate_chart", "list_available_tools"} <= always


@pytest.mark.parametrize(
    ("params", "field"), [({}, "q"), ({"q": "  "}, "q"), ({"q": "x", "k": 0}, "k"), ({"q": "x", "k": "many"}, "k")]
)
def test_select_rejects_bad_parameters_naming_them(orch, params, field) -> None:
    response = httpx.get(orch.url + "/v1/tools/select", params=params, headers=auth())
    assert error_of(response, 422, field)["code"] == "invalid_argument"


BAD_RUNS = [
    ({}, "message"),
    ({"message": "   "}, "message"),
    ({"message": "x" * 40_000}, "message"),
    ({"message": "hi", "history": "not a list"}, "history"),
    ({"message": "hi", "history": [{"role": "wizard", "content": "x"}]}, "history.0.role"),
    ({"message": "hi", "spatialContext": {"mapCenter": {"lat": 91, "lon": 0}}}, "spatialContext.mapCenter.lat"),
    ({"message": "hi", "spatialContext": {"mapCenter": {"lat": 0, "lon": -190}}}, "spatialContext.mapCenter.lon"),
    ({"message": "hi", "spatialContext": {"zoom": 40}}, "spatialContext.zoom"),
    ({"message": "hi", "spatialContext": {"selectedFeature": {"type": "Point"}}}, "spatialContext.selectedFeature"),
    (
        {"message": "hi", "spatialContext": {"drawnGeometry": {"type": "Circle", "coordinates": []}}},
        "spatialContext.drawnGeometry",
    ),
    (  # checked as the gateway checks it: coordinates inside WGS84 ranges
        {"message": "hi", "spatialContext": {"drawnGeometry": {"type": "Point", "coordinates": [200, 10]}}},
        "spatialContext.drawnGeometry",
        "longitude 200.0 is outside -180..180",
    ),
    (
        {
            "message": "hi",
            "spatialContext": {
                "selectedFeature": {
                    "type": "Feature",
                    "properties": {},
                    "geometry": {"type": "Point", "coordinates": [0, 95]},
                }
            },
        },
        "spatialContext.selectedFeature",
        "latitude 95.0 is outside -90..90",
    ),
    ({"message": "hi", "options": {"maxSteps": 1000}}, "options.maxSteps"),
    ({"message": "hi", "options": {"model": "bad model name!"}}, "options.model"),
    ({"message": "hi", "runId": "not a valid id"}, "runId"),
    ({"message": 42}, "message"),
    ([1, 2], "body"),
]


@pytest.mark.parametrize("case", BAD_RUNS)
def test_bad_run_requests_get_422_naming_the_field(orch, case) -> None:
    body, field, *words = case
    response = httpx.post(orch.url + "/v1/runs", json=body, headers=auth())
    refused = error_of(response, 422, field)
    assert refused["code"] == "invalid_argument"
    assert all(word in refused["message"] for word in words), refused


def test_a_body_that_is_not_json_gets_422(orch) -> None:
    response = httpx.post(orch.url + "/v1/runs", content=b"{not json", headers=auth())
    assert error_of(response, 422, "body")["message"].startswith("body: not valid JSON: ")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer forged"}], ids=["missing", "forged"])
def test_every_v1_call_needs_a_valid_internal_token(orch, headers) -> None:
    for refused in (
        httpx.post(orch.url + "/v1/runs", json={"message": "hi"}, headers=headers),
        httpx.get(orch.url + "/v1/tools", headers=headers),
        httpx.get(orch.url + "/v1/tools/select", params={"q": "x"}, headers=headers),
    ):
        body = error_of(refused, 401)
        assert body["code"] == "unauthenticated" and body["message"].startswith("invalid internal token: ")
        assert refused.headers["WWW-Authenticate"] == "Bearer"


def test_health_and_readiness(orch) -> None:
    assert httpx.get(orch.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(orch.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"redis": "ok", "model": "ok", "tools": "ok"}


@pytest.mark.asyncio
async def test_metrics_and_spans_describe_a_run(orch, model_url, trace_file: Path) -> None:
    message = f"metrics run [{uuid.uuid4().hex[:8]}]"
    await set_rules(
        model_url,
        {
            "name": "call",
            "match": {"last_user": "metrics run", "step": 0},
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
        {"name": "answer", "match": {"last_user": "metrics run", "step": 1}, "content": "Counted."},
    )
    events = await run_events(orch.url, {"message": message})
    run_id = terminal(events).proto.run_id
    metrics = httpx.get(orch.url + "/metrics").text
    for name in (
        'gen_ai_client_operation_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="ollama",gen_ai_request_model="scripted"}',
        'gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_provider_name="ollama",gen_ai_request_model="scripted",gen_ai_token_type="input"}',
        'gen_ai_server_time_to_first_token_seconds_count{gen_ai_operation_name="chat"',
        'stacgis_tool_calls_total{outcome="ok",server="raster",tool="list_raster_collections"}',
        'stacgis_tool_duration_seconds_count{server="raster",tool="list_raster_collections"}',
        "stacgis_agent_steps_per_run_count",
        "stacgis_tool_selection_seconds_count",
        "stacgis_agent_active_runs 0.0",
        'stacgis_agent_runs_total{outcome="completed"}',
        'stacgis_circuit_breaker_state{server="raster"} 0.0',
    ):
        assert name in metrics, name
    spans = [json.loads(line) for line in trace_file.read_text().splitlines()]
    root = next(s for s in spans if s["attributes"].get("stacgis.run_id") == run_id)
    in_trace = [s for s in spans if s["trace_id"] == root["trace_id"]]
    by_name = {s["name"]: s for s in in_trace}
    # No select_tools span: with tool_selection=all (the default) every step offers every tool.
    for name in ("agent_step", "chat scripted", "execute_tool list_raster_collections"):
        assert name in by_name, sorted(by_name)
    chat = by_name["chat scripted"]
    assert chat["kind"] == "CLIENT" and chat["attributes"]["gen_ai.usage.input_tokens"] > 0
    step_ids = {s["span_id"] for s in in_trace if s["name"] == "agent_step"}
    assert by_name["execute_tool list_raster_collections"]["parent_span_id"] in step_ids


@pytest.mark.asyncio
async def test_openai_compatible_provider_runs_the_same_loop(model_server, redis_url, raster, model_url) -> None:
    env = orchestrator_env(model_server.url, redis_url, {"raster": raster.mcp}, llm_provider="openai")
    message = f"openai dialect [{uuid.uuid4().hex[:8]}]"
    await set_rules(
        model_url,
        {
            "name": "call",
            "match": {"last_user": "openai dialect", "step": 0},
            "thinking": "Reasoning arrives as delta.reasoning here.",
            "thinking_format": "field",
            "tool_calls": [
                {"name": "get_raster_statistics", "arguments": {"collection_id": "pr-1999", "bbox": [0, 0, 1, 1]}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "openai dialect", "step": 1},
            "content": "Max {{tool:get_raster_statistics:max}} mm.",
            "chunk_chars": 3,
        },
    )
    with orchestrator(env) as service:
        events = await run_events(service.url, {"message": message})
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["get_raster_statistics"]
    assert content(events) == "Max 412.0 mm."
    done = terminal(events).proto.done
    assert done.finish_reason == "completed" and done.usage.input_tokens > 0


@pytest.mark.asyncio
async def test_model_server_down_is_an_error_event_not_a_hang(redis_url, raster) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    env = orchestrator_env(dead, redis_url, {"raster": raster.mcp}, llm_unavailable_wait_seconds="4")
    with orchestrator(env) as service:
        events = await run_events(service.url, {"message": "anyone there?"}, timeout=30)
        readiness = httpx.get(service.url + "/readyz")
    error = terminal(events).proto.error
    assert error.code == "model_unavailable" and dead in error.message
    waits = [e.payload["text"] for e in events if e.name == "thinking"]
    assert len(waits) == 2 and all(w.startswith("Waiting for the model") for w in waits), "1 s, then 2 s: 4 s spent"
    assert readiness.status_code == 503 and readiness.json()["checks"]["model"].startswith("error")


@pytest.mark.asyncio
async def test_a_run_started_while_the_model_server_restarts_completes(redis_url, raster, tmp_path) -> None:
    port = free_port()
    env = orchestrator_env(f"http://127.0.0.1:{port}", redis_url, {"raster": raster.mcp}, llm_warmup="false")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"name": "ok", "match": {"last_user": "still there"}, "content": "Back."}]}))
    model_env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_RULES_PATH": str(rules)}
    with orchestrator(env) as service:
        run = asyncio.create_task(run_events(service.url, {"message": "still there?"}, timeout=60))
        await asyncio.sleep(2.5)
        assert not run.done()
        with run_service("stacgis_model_server", model_env, port):
            events = await run
    assert content(events) == "Back." and terminal(events).proto.done.finish_reason == "completed"
    assert any(e.payload["text"].startswith("Waiting for the model") for e in events if e.name == "thinking")


@pytest.mark.asyncio
async def test_a_request_too_long_for_the_context_window_fails_clearly(stack_env: dict[str, str]) -> None:
    with orchestrator({**stack_env, "ORCHESTRATOR_LLM_NUM_CTX": "8192"}) as small:
        events = await run_events(small.url, {"message": "Describe this: " + "lorem ipsum " * 2600})
    error = terminal(events).proto.error
    assert error.code == "context_too_long"
    assert "8192" in error.message and "tokens" in error.message


def test_without_redis_runs_are_refused_with_503_and_readiness_says_why(model_server, raster) -> None:
    env = orchestrator_env(model_server.url, f"redis://127.0.0.1:{free_port()}/0", {"raster": raster.mcp})
    with orchestrator(env) as service:
        response = httpx.post(service.url + "/v1/runs", json={"message": "hello"}, headers=auth(), timeout=30)
        readiness = httpx.get(service.url + "/readyz", timeout=30)
    refused = error_of(response, 503)
    assert refused["code"] == "unavailable" and response.headers["Retry-After"] == "5"
    assert refused["message"].startswith("the coordination store (Redis) is unavailable: ")
    assert readiness.status_code == 503 and readiness.json()["checks"]["redis"].startswith("error")
