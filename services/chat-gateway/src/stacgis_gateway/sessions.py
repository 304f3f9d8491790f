"""Sessions: Postgres holds them for good; Redis caches the owner and recent model history with a TTL,
and holds the one-active-run-per-session lock."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from .keys import RedisKeys
from .messages import ChatMessage, trim_history
from .store import HistoryStore

TITLE_CHARS = 80

# Delete the lock only if it still names our run (another run may hold it after ours expired).
RELEASE_IF_OWNER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
REFRESH_IF_OWNER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


def title_of(question: str) -> str:
    """A new session's title: its first question on one line, cut to TITLE_CHARS."""
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


@dataclass
class Session:
    id: str
    user_id: str
    history: list[ChatMessage]


class SessionNotFound(Exception):
    """No such session for this user (whether it does not exist or belongs to someone else)."""


class SessionService:
    def __init__(
        self,
        redis: Redis,
        keys: RedisKeys,
        store: HistoryStore,
        ttl_seconds: int,
        lock_ttl_seconds: float,
        history_limit: int,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._store = store
        self._ttl = ttl_seconds
        self._lock_ttl_ms = int(lock_ttl_seconds * 1000)
        self._history_limit = history_limit
        self._release = redis.register_script(RELEASE_IF_OWNER)
        self._refresh = redis.register_script(REFRESH_IF_OWNER)

    def new(self, user_id: str) -> Session:
        """A session not stored yet: it is stored once its first run is admitted (see save_new)."""
        return Session(str(uuid.uuid4()), user_id, [])

    async def save_new(self, session: Session, title: str | None) -> None:
        await self._store.create_session(session.id, session.user_id, title)
        await self._cache(session)

    async def load(self, session_id: str, user_id: str) -> Session:
        """The session with its recent history, from Redis or, when the key expired, from Postgres."""
        raw = await self._redis.get(self._keys.session(session_id))
        if raw is not None:
            data = json.loads(raw)
            if data.get("user_id") != user_id:
                raise SessionNotFound(session_id)
            await self._redis.expire(self._keys.session(session_id), self._ttl)
            history = [ChatMessage.from_proto_json(item) for item in data.get("history", [])]
            return Session(session_id, user_id, history)
        row = await self._store.get_session(session_id)
        if row is None or row.user_id != user_id:
            raise SessionNotFound(session_id)
        history = trim_history(await self._store.model_history(session_id, self._history_limit), self._history_limit)
        session = Session(session_id, user_id, history)
        await self._cache(session)
        return session

    async def owned(self, session_id: str, user_id: str) -> bool:
        row = await self._store.get_session(session_id)
        return row is not None and row.user_id == user_id

    async def append(self, session: Session, messages: list[ChatMessage]) -> None:
        """Add a finished run's messages to the cached history (Postgres already has them)."""
        session.history = trim_history(session.history + messages, self._history_limit)
        await self._cache(session)

    async def replace_from(self, session: Session, turn: int, question: str) -> None:
        """Drop the session's `turn`-th question and all after it (regenerate, edit and resend), in Postgres
        and in the cached history the next run is given. Replacing the first question retitles the session
        after the new one, unless the user renamed it."""
        first = await self._store.first_question(session.id) if turn == 0 else None
        await self._store.truncate_at_question(session.id, session.user_id, turn)
        if first is not None:
            await self._store.retitle_unless_renamed(session.id, session.user_id, title_of(first), title_of(question))
        history = await self._store.model_history(session.id, self._history_limit)
        session.history = trim_history(history, self._history_limit)
        await self._cache(session)

    async def _cache(self, session: Session) -> None:
        payload = {"user_id": session.user_id, "history": [m.to_cache() for m in session.history]}
        await self._redis.set(self._keys.session(session.id), json.dumps(payload), ex=self._ttl)

    async def forget(self, session_id: str) -> None:
        await self._redis.delete(self._keys.session(session_id), self._keys.session_run(session_id))

    # The active-run lock: one run per session at a time.

    async def lock_run(self, session_id: str, run_id: str) -> str | None:
        """Take the session's run lock; returns the run id holding it when it is taken already."""
        key = self._keys.session_run(session_id)
        if await self._redis.set(key, run_id, nx=True, px=self._lock_ttl_ms):
            return None
        holder = await self._redis.get(key)
        if holder is None:  # expired in between: try once more
            if await self._redis.set(key, run_id, nx=True, px=self._lock_ttl_ms):
                return None
            holder = await self._redis.get(key)
        return str(holder) if holder is not None else "unknown"

    async def active_run(self, session_id: str) -> str | None:
        value = await self._redis.get(self._keys.session_run(session_id))
        return str(value) if value is not None else None

    async def refresh_run_lock_in(self, pipe: Pipeline, session_id: str, run_id: str) -> None:
        """Queue pushing back the expiry of the session's run lock (while `run_id` holds it) on `pipe`."""
        await self._refresh(keys=[self._keys.session_run(session_id)], args=[run_id, self._lock_ttl_ms], client=pipe)

    async def unlock_run(self, session_id: str, run_id: str) -> None:
        await self._release(keys=[self._keys.session_run(session_id)], args=[run_id])
