"""A bounded record of chat requests, so tests can see what the model was asked and how it ended."""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count
from typing import Any, Literal

Outcome = Literal["in_progress", "completed", "client_disconnected", "error"]


@dataclass
class LogEntry:
    id: int
    path: str
    model: str
    body: Any
    received_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    started: float = field(default_factory=time.monotonic)
    outcome: Outcome = "in_progress"
    backend: str | None = None
    rule: str | None = None
    status: int = 200
    error: str | None = None
    chunks_sent: int = 0
    # Pieces the back end produced (tokens for the real model): stops growing once generation stops.
    generated: int = 0
    duration_ms: float | None = None

    def finish(self, outcome: Outcome, error: str | None = None, status: int | None = None) -> None:
        # The first ending wins: a disconnect seen while the back end unwinds is not overwritten.
        if self.outcome != "in_progress":
            return
        self.outcome = outcome
        self.error = error
        if status is not None:
            self.status = status
        self.duration_ms = round((time.monotonic() - self.started) * 1000, 1)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "model": self.model,
            "received_at": self.received_at,
            "backend": self.backend,
            "rule": self.rule,
            "outcome": self.outcome,
            "client_disconnected": self.outcome == "client_disconnected",
            "status": self.status,
            "error": self.error,
            "chunks_sent": self.chunks_sent,
            "generated": self.generated,
            "duration_ms": self.duration_ms,
            "body": self.body,
        }


class RequestLog:
    def __init__(self, size: int) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=size)
        self._ids = count(1)

    def add(self, path: str, model: str, body: Any) -> LogEntry:
        entry = LogEntry(id=next(self._ids), path=path, model=model, body=body)
        self._entries.append(entry)
        return entry

    def entries(self, contains: str | None = None) -> list[LogEntry]:
        if not contains:
            return list(self._entries)
        return [entry for entry in self._entries if contains in json.dumps(entry.body, ensure_ascii=False)]

    def clear(self) -> None:
        self._entries.clear()
