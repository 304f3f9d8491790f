"""A per-server circuit breaker: after repeated failures calls fail fast until a probe succeeds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]
STATE_VALUES: dict[State, int] = {"closed": 0, "half_open": 1, "open": 2}


class CircuitBreaker:
    """Closed: calls pass. `threshold` consecutive failures open it. Open: calls fail fast until
    `reset_seconds` pass; then one probe is let through (half-open): success closes, failure re-opens."""

    def __init__(
        self,
        threshold: int,
        reset_seconds: float,
        on_change: Callable[[State], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold = threshold
        self.reset_seconds = reset_seconds
        self._on_change = on_change
        self._clock = clock
        self._state: State = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._probe_in_flight = False

    @property
    def state(self) -> State:
        if self._state == "open" and self._clock() - self._opened_at >= self.reset_seconds:
            return "half_open"
        return self._state

    def retry_in(self) -> float:
        """Seconds until an open breaker lets a probe through."""
        return max(0.0, self.reset_seconds - (self._clock() - self._opened_at)) if self._state == "open" else 0.0

    def allow(self) -> bool:
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._probe_in_flight:
            self._set("half_open")
            self._probe_in_flight = True
            return True
        return False

    def record_success(self) -> None:
        self._failures = 0
        self._probe_in_flight = False
        if self._state != "closed":
            self._set("closed")

    def record_failure(self) -> None:
        self._failures += 1
        was_probe = self._probe_in_flight
        self._probe_in_flight = False
        if was_probe or self._failures >= self.threshold:
            self._opened_at = self._clock()
            self._set("open")

    def release_probe(self) -> None:
        """A probe ended without telling anything about the server (e.g. it was cancelled)."""
        self._probe_in_flight = False

    def _set(self, state: State) -> None:
        changed = state != self._state
        self._state = state
        if changed and self._on_change is not None:
            self._on_change(state)
