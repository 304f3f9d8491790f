"""Raw MCP over streamable HTTP: JSON-RPC bodies we write byte for byte (NaN tokens, deep nesting,
huge payloads), and the checks every answer must pass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
import jsonschema

from stacgis_common.settings import DEV_TOKEN_SECRET

# A protocol version the SDK serves statelessly without a handshake (the tool servers are stateless).
PROTOCOL_VERSION = "2025-11-25"
CALL_TIMEOUT_SECONDS = 90.0
# An error longer than this is not a clear error (and floods the model's context).
MAX_ERROR_CHARS = 4000
PARSE_ERROR = -32700
# Text that must never come back from a tool: internals or the content of files outside the data.
LEAK_MARKERS = (
    "Traceback (most recent call last)",
    "root:x:0:0",
    "[extensions]",
    "PATH=/usr",
    DEV_TOKEN_SECRET,
)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"the answer holds the non-JSON token {token}")


def strict_loads(text: str) -> Any:
    """JSON as browsers parse it: NaN and Infinity are errors."""
    return json.loads(text, parse_constant=_reject_constant)


@dataclass
class Answer:
    status: int
    body: str
    message: dict[str, Any] | None  # the JSON-RPC response, if there was one
    problem: str | None = None  # why the answer itself is malformed

    @property
    def result(self) -> dict[str, Any] | None:
        return None if self.message is None else self.message.get("result")

    @property
    def rpc_error(self) -> dict[str, Any] | None:
        return None if self.message is None else self.message.get("error")


class McpWire:
    def __init__(self, base_url: str, token: str) -> None:
        self.url = base_url.rstrip("/") + "/mcp"
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        self.http = httpx.Client(timeout=httpx.Timeout(CALL_TIMEOUT_SECONDS, connect=10.0))
        self._id = 0

    def close(self) -> None:
        self.http.close()

    def body(self, method: str, params: dict[str, Any]) -> str:
        self._id += 1
        # allow_nan: NaN and Infinity go out as bare tokens, as a sloppy client would send them.
        return json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}, allow_nan=True)

    def post(self, content: str | bytes, headers: dict[str, str] | None = None) -> Answer:
        response = self.http.post(self.url, content=content, headers={**self.headers, **(headers or {})})
        return parse_answer(response)

    def call_tool(self, name: str, arguments: Any) -> Answer:
        return self.post(self.body("tools/call", {"name": name, "arguments": arguments}))

    def list_tools(self) -> list[dict[str, Any]]:
        answer = self.post(self.body("tools/list", {}))
        assert answer.result is not None, f"tools/list failed: {answer.status} {answer.body[:500]}"
        tools: list[dict[str, Any]] = answer.result["tools"]
        return tools


def parse_answer(response: httpx.Response) -> Answer:
    text = response.text
    kind = response.headers.get("content-type", "")
    payloads: list[str] = []
    if kind.startswith("text/event-stream"):
        payloads = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    elif kind.startswith("application/json") and text.strip():
        payloads = [text]
    for payload in payloads:
        try:
            message = strict_loads(payload)
        except ValueError as error:
            return Answer(response.status_code, text, None, f"unparseable answer: {error}")
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return Answer(response.status_code, text, message)
    return Answer(response.status_code, text, None)


def problems_with_call(answer: Answer, output_schema: dict[str, Any] | None) -> list[str]:
    """Everything wrong with the answer to a well-formed tools/call: it must be a clean tool error
    or a valid result, never a server failure, a protocol error or leaked internals."""
    problems: list[str] = []
    if answer.status >= 500:
        problems.append(f"HTTP {answer.status}")
    if answer.problem:
        problems.append(answer.problem)
    for marker in LEAK_MARKERS:
        if marker in answer.body:
            problems.append(f"the answer leaks {marker!r}")
    result = answer.result
    if result is None and answer.status == 413:
        return problems  # a body over the server's size limit: refused before any tool runs
    rpc = answer.rpc_error or {}
    if result is None and answer.status == 400 and rpc.get("code") == PARSE_ERROR:
        return problems  # JSON the server's parser refuses (e.g. a lone surrogate escape): a clean refusal
    if result is None:
        error = answer.rpc_error
        problems.append(
            f"no tool result (HTTP {answer.status}, JSON-RPC error {error})"
            if error
            else f"no JSON-RPC answer (HTTP {answer.status}): {answer.body[:300]!r}"
        )
        return problems
    content = result.get("content") or []
    texts = [str(item.get("text", "")) for item in content if isinstance(item, dict)]
    if result.get("isError"):
        message = " ".join(texts).strip()
        if not message:
            problems.append("a tool error without a message")
        elif len(message) > MAX_ERROR_CHARS:
            problems.append(f"a tool error of {len(message)} characters (not a clear error): {message[:200]!r}...")
        return problems
    if not content and result.get("structuredContent") is None:
        problems.append("a successful result with no content")
    if output_schema and result.get("structuredContent") is not None:
        try:
            jsonschema.validate(result["structuredContent"], output_schema)
        except jsonschema.ValidationError as error:
            problems.append(f"structuredContent violates the output schema: {error.message}")
    return problems
