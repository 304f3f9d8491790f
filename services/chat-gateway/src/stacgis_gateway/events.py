"""AgentEvent (proto/stacgis/v1/events.proto) events the gateway writes itself, in their proto3 JSON form.

Parsing the orchestrator's events and folding a run's events are in `contract`.
"""

from __future__ import annotations

from typing import Any

TERMINAL = frozenset({"done", "error"})


def make_event(run_id: str, seq: int, step: int, field: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An event the gateway writes itself (int64 `seq` as a string, as the proto3 JSON mapping has it)."""
    return {"runId": run_id, "seq": str(seq), "step": step, field: payload}
