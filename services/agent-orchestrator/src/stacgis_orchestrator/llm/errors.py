"""Model-server failures turned into clear, classified errors."""

from __future__ import annotations

import httpx

from .types import ModelError


def model_http_error(status: int, text: str, model: str, base_url: str) -> ModelError:
    lowered = text.lower()
    if status == 404 or "not found" in lowered:
        return ModelError(
            "model_unavailable", f"model {model!r} is not available on the model server at {base_url}: {text}"
        )
    if "does not support tools" in lowered or "tools are not supported" in lowered:
        return ModelError("tools_unsupported", f"model {model!r} does not support native tool calls: {text}")
    if "context" in lowered and any(word in lowered for word in ("length", "exceed", "window", "too long")):
        return ModelError("context_too_long", f"the conversation is too long for model {model!r}: {text}")
    if status in (502, 503, 504):
        return ModelError(
            "model_unavailable", f"the model server at {base_url} is unavailable ({status}): {text}", transient=True
        )
    return ModelError("model_error", f"the model server answered {status}: {text}")


def transport_error(error: httpx.HTTPError, base_url: str, timeout_seconds: float) -> ModelError:
    if isinstance(error, httpx.TimeoutException):
        return ModelError(
            "model_timeout",
            f"the model server at {base_url} sent nothing for {timeout_seconds:g} s ({type(error).__name__})",
        )
    if isinstance(error, httpx.ConnectError):
        return ModelError("model_unavailable", f"cannot reach the model server at {base_url}: {error}", transient=True)
    return ModelError(
        "model_unavailable",
        f"the connection to the model server at {base_url} failed: {type(error).__name__}: {error}",
        transient=True,
    )
