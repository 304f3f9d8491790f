"""Client of the agent-orchestrator: start a run and read its SSE stream, cancel, answer approvals."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from stacgis_common.http_errors import error_body, message_of


class OrchestratorError(Exception):
    """The orchestrator could not be reached or refused the run."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Forwarded:
    """The orchestrator's answer to a forwarded request."""

    status: int
    body: Any


class OrchestratorClient:
    def __init__(self, base_url: str, read_timeout: float, max_connections: int) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(connect=5.0, read=read_timeout, write=10.0, pool=10.0),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def ping(self) -> None:
        response = await self._http.get("/healthz", timeout=2.0)
        response.raise_for_status()

    async def stream_run(self, request: dict[str, Any], token: str) -> AsyncGenerator[dict[str, Any], None]:
        """POST /v1/runs and yield each event's data (AgentEvent proto3 JSON) as it arrives."""
        headers = {"Authorization": f"Bearer {token}"}
        try:
            async with aconnect_sse(self._http, "POST", "/v1/runs", json=request, headers=headers) as source:
                response = source.response
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace")
                    try:
                        reason = message_of(json.loads(text)) or text[:500]
                    except ValueError:
                        reason = text[:500]
                    raise OrchestratorError(
                        f"orchestrator refused the run (HTTP {response.status_code}): {reason}", response.status_code
                    )
                async for sse in source.aiter_sse():
                    if not sse.data:
                        continue
                    try:
                        event = json.loads(sse.data)
                    except json.JSONDecodeError as error:
                        raise OrchestratorError(f"orchestrator sent an event that is not JSON: {error}") from None
                    if not isinstance(event, dict):
                        raise OrchestratorError("orchestrator sent an event that is not a JSON object")
                    yield event
        except httpx.HTTPError as error:
            raise OrchestratorError(f"orchestrator connection failed: {type(error).__name__}: {error}") from None

    async def _request(self, method: str, path: str, token: str, body: dict[str, Any] | None = None) -> Forwarded:
        try:
            response = await self._http.request(
                method,
                path,
                json=body if method == "POST" else None,
                headers={"Authorization": f"Bearer {token}"},
                timeout=10.0,
            )
        except httpx.HTTPError as error:
            raise OrchestratorError(f"orchestrator unreachable: {type(error).__name__}: {error}") from None
        try:
            payload: Any = response.json()
        except ValueError:
            payload = error_body(None, response.text[:500], "not_json")
        return Forwarded(response.status_code, payload)

    async def _post(self, path: str, token: str, body: dict[str, Any] | None = None) -> Forwarded:
        return await self._request("POST", path, token, body or {})

    async def models(self, token: str) -> Forwarded:
        """GET /v1/models: the chat models a run may ask for, the default first."""
        return await self._request("GET", "/v1/models", token)

    async def cancel(self, run_id: str, token: str) -> Forwarded:
        return await self._post(f"/v1/runs/{run_id}/cancel", token)

    async def answer_approval(self, approval_id: str, approved: bool, reason: str | None, token: str) -> Forwarded:
        # The body is stacgis.v1.ApprovalDecision in proto3 JSON: an absent reason is left out, not null.
        decision: dict[str, Any] = {"approved": approved}
        if reason:
            decision["reason"] = reason
        return await self._post(f"/v1/approvals/{approval_id}", token, decision)
