"""Names of every Redis key the gateway uses, in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RedisKeys:
    prefix: str = ""

    @property
    def gate(self) -> str:
        """Sorted set of active runs scored by their last refresh (server time)."""
        return f"{self.prefix}chat:active_slots"

    def user_gate(self, user_id: str) -> str:
        """Sorted set of one user's active runs, like `gate` (the per-user concurrency cap)."""
        return f"{self.prefix}chat:active_slots:user:{user_id}"

    @property
    def pending_history(self) -> str:
        """Hash run id -> JSON of a finished run's history write that Postgres could not take yet."""
        return f"{self.prefix}chat:pending_history"

    def session(self, session_id: str) -> str:
        """Cached session: owner and recent model history (JSON), TTL refreshed on every message."""
        return f"{self.prefix}chat:session:{session_id}"

    def session_run(self, session_id: str) -> str:
        """The run currently active in a session (one at a time)."""
        return f"{self.prefix}chat:session:{session_id}:run"

    def run_meta(self, run_id: str) -> str:
        """Hash: owner, session, status and heartbeat of a run."""
        return f"{self.prefix}run:{run_id}:meta"

    def run_events(self, run_id: str) -> str:
        """Redis Stream of the run's events; entry ids are the SSE ids."""
        return f"{self.prefix}run:{run_id}:events"

    @property
    def live_runs(self) -> str:
        """Sorted set of unfinished runs scored by their last heartbeat: where replicas look for orphans."""
        return f"{self.prefix}run:live"

    def run_lost(self, run_id: str) -> str:
        """Set once by whichever replica declares a run's owner dead, so the error is written once."""
        return f"{self.prefix}run:{run_id}:lost"

    def approval(self, approval_id: str) -> str:
        """Which run and user an approval request belongs to."""
        return f"{self.prefix}chat:approval:{approval_id}"

    def rate(self, user_id: str, window: int) -> str:
        return f"{self.prefix}chat:ratelimit:{user_id}:{window}"

    def reader_wake(self, reader_id: str) -> str:
        """A gateway process's wake-up stream: appended to when a stream starts being followed."""
        return f"{self.prefix}chat:reader:{reader_id}:wake"
