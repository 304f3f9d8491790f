"""Bad arguments get a tool error naming the argument; the server keeps answering."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stacgis_common.testing import RunningService, call_tool, token_for


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    [
        ("search_vector_features", {"query": ""}, "query"),
        ("search_vector_features", {"query": "   "}, "query"),
        ("search_vector_features", {"query": "x" * 201}, "query"),
        ("search_vector_features", {"query": "Berlin", "limit": 0}, "limit"),
        ("search_vector_features", {"query": "Berlin", "limit": 51}, "limit"),
        ("search_vector_features", {"query": "Berlin", "dataset": "planets"}, "dataset"),
        ("search_vector_features", {"query": "Berlin", "bbox": [10, 50, 12]}, "bbox"),
        ("search_vector_features", {"query": "Berlin", "bbox": [10, 55, 12, 50]}, "bbox"),
        ("get_vector_feature", {"dataset": "countries", "feature_id": "ATLANTIS"}, "feature_id"),
        ("get_vector_feature", {"dataset": "countries", "feature_id": ""}, "feature_id"),
        ("get_vector_feature", {"dataset": "nope", "feature_id": "DEU"}, "dataset"),
        ("get_vector_feature", {"dataset": "countries", "feature_id": "DEU", "simplify": 0}, "simplify"),
        ("get_vector_feature", {"dataset": "countries", "feature_id": "DEU", "simplify": 100}, "simplify"),
        ("query_vector_by_bbox", {"dataset": "countries", "bbox": [-200, 0, 10, 10]}, "bbox"),
        ("query_vector_by_bbox", {"dataset": "countries", "bbox": [0, -95, 10, 10]}, "bbox"),
        ("query_vector_by_bbox", {"dataset": "countries", "bbox": [0, 0, "a", 10]}, "bbox"),
        ("query_vector_by_bbox", {"dataset": "countries", "bbox": [0, 0, 10, 10], "limit": 501}, "limit"),
        ("query_vector_by_bbox", {"dataset": "rivers", "bbox": [0, 0, 10, 10]}, "dataset"),
    ],
)
async def test_bad_argument_is_named(
    vector_server: RunningService, tool: str, arguments: dict[str, Any], argument: str
) -> None:
    error, message = await call_tool(vector_server.url, tool, arguments)
    assert error, message
    assert argument in message
    # The next call on the same server still works.
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": "Berlin", "limit": 1})
    assert not error and result["results"][0]["name"] == "Berlin"


@pytest.mark.asyncio
async def test_nan_in_bbox_is_rejected(vector_server: RunningService) -> None:
    # JSON has no NaN, but Python's parser accepts it: the tool must still refuse it.
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_vector_by_bbox",'
        '"arguments":{"dataset":"countries","bbox":[NaN,0,10,10]}}}'
    )
    headers = {
        "Authorization": f"Bearer {token_for('tester')}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(vector_server.url + "/mcp", content=body, headers=headers)
    assert response.status_code == 200
    assert '"isError":true' in response.text
    assert "bbox: must hold 4 finite numbers" in response.text


def test_mcp_without_token_is_refused(vector_server: RunningService) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(vector_server.url + "/mcp", json=body, headers=headers, timeout=10).status_code == 401
