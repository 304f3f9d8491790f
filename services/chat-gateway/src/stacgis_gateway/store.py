"""Postgres side of the gateway (schema `gateway`): sessions, messages and per-run usage."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg

from stacgis_common.db import apply_migrations, create_pool

from .messages import ChatMessage

# Errors meaning "Postgres cannot be reached right now", not "this statement is wrong".
POSTGRES_UNREACHABLE: tuple[type[Exception], ...] = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,  # cannot connect now, admin or crash shutdown
    # A pooled connection left mid-operation when Postgres died under it ("cannot switch to state
    # 11; another operation is in progress"): seen under SIGKILL of Postgres.
    asyncpg.exceptions.InternalClientError,
)

SCHEMA = "gateway"
MIGRATIONS = Path(__file__).parent / "migrations"


@dataclass(frozen=True)
class SessionRow:
    id: str
    user_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    user_id: str
    session_id: str
    outcome: str  # "done", "error" or "cancelled"
    finish_reason: str | None
    error_code: str | None
    input_tokens: int
    output_tokens: int
    tool_calls: int
    steps: int
    started_at: datetime


def _text(value: str | None) -> str | None:
    # Postgres text and jsonb cannot hold NUL; a model or tool may still produce one.
    return value.replace("\x00", "\ufffd") if value else value


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {str(_text(key)): _clean(item) for key, item in value.items()}
    return value


async def _init_json(connection: asyncpg.Connection) -> None:
    await connection.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


class HistoryStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, dsn: str, max_size: int) -> HistoryStore:
        pool = await create_pool(dsn, min_size=1, max_size=max_size)
        await apply_migrations(pool, SCHEMA, MIGRATIONS)
        return cls(pool)

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def close(self) -> None:
        await self._pool.close()

    async def ping(self) -> None:
        await self._pool.fetchval("SELECT 1")

    async def create_session(self, session_id: str, user_id: str, title: str | None) -> None:
        await self._pool.execute(
            "INSERT INTO gateway.sessions (id, user_id, title) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
            uuid.UUID(session_id),
            user_id,
            title,
        )

    async def get_session(self, session_id: str) -> SessionRow | None:
        row = await self._pool.fetchrow(
            "SELECT id, user_id, title, created_at, updated_at FROM gateway.sessions WHERE id = $1",
            uuid.UUID(session_id),
        )
        if row is None:
            return None
        return SessionRow(str(row["id"]), row["user_id"], row["title"], row["created_at"], row["updated_at"])

    async def list_sessions(self, user_id: str, limit: int, offset: int) -> list[dict[str, Any]]:
        # message_count counts the bubbles a user sees: user messages and assistant answers with text.
        rows = await self._pool.fetch(
            """
            SELECT s.id, s.title, s.created_at, s.updated_at,
                   (SELECT count(*) FROM gateway.messages m
                     WHERE m.session_id = s.id AND m.role IN ('user', 'assistant') AND m.content <> '')
                   AS message_count
              FROM gateway.sessions s
             WHERE s.user_id = $1
             ORDER BY s.updated_at DESC, s.id
             LIMIT $2 OFFSET $3
            """,
            user_id,
            limit,
            offset,
        )
        return [
            {
                "id": str(row["id"]),
                "title": row["title"],
                "created_at": row["created_at"],
                "updated_at": row["updated_at"],
                "message_count": int(row["message_count"]),
            }
            for row in rows
        ]

    async def rename_session(self, session_id: str, user_id: str, title: str) -> SessionRow | None:
        row = await self._pool.fetchrow(
            """
            UPDATE gateway.sessions SET title = $3, updated_at = now()
             WHERE id = $1 AND user_id = $2
            RETURNING id, user_id, title, created_at, updated_at
            """,
            uuid.UUID(session_id),
            user_id,
            title,
        )
        if row is None:
            return None
        return SessionRow(str(row["id"]), row["user_id"], row["title"], row["created_at"], row["updated_at"])

    async def map_state(self, session_id: str, user_id: str) -> tuple[dict[str, Any] | None, datetime | None] | None:
        """(saved map state or None, when it was saved) of the user's session; None if no such session."""
        async with self._pool.acquire() as connection:
            await _init_json(connection)
            row = await connection.fetchrow(
                "SELECT map_state, map_state_updated_at FROM gateway.sessions WHERE id = $1 AND user_id = $2",
                uuid.UUID(session_id),
                user_id,
            )
        if row is None:
            return None
        return row["map_state"], row["map_state_updated_at"]

    async def save_map_state(self, session_id: str, user_id: str, state: dict[str, Any]) -> datetime | None:
        """Replace the session's map state (the session's place in the list does not change); None if no such
        session for this user."""
        async with self._pool.acquire() as connection:
            await _init_json(connection)
            saved: datetime | None = await connection.fetchval(
                """
                UPDATE gateway.sessions SET map_state = $3, map_state_updated_at = now()
                 WHERE id = $1 AND user_id = $2
                RETURNING map_state_updated_at
                """,
                uuid.UUID(session_id),
                user_id,
                _clean(state),
            )
        return saved

    async def delete_session(self, session_id: str, user_id: str) -> bool:
        result = await self._pool.execute(
            "DELETE FROM gateway.sessions WHERE id = $1 AND user_id = $2", uuid.UUID(session_id), user_id
        )
        return bool(result.endswith(" 1"))

    async def messages(self, session_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Messages in conversation order; with `limit`, only the last ones."""
        async with self._pool.acquire() as connection:
            await _init_json(connection)
            if limit is None:
                rows = await connection.fetch(
                    "SELECT role, content, tool_calls, tool_call_id, name, grounding, created_at"
                    " FROM gateway.messages WHERE session_id = $1 ORDER BY id",
                    uuid.UUID(session_id),
                )
            else:
                rows = await connection.fetch(
                    "SELECT * FROM (SELECT id, role, content, tool_calls, tool_call_id, name, grounding, created_at"
                    " FROM gateway.messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2) last ORDER BY id",
                    uuid.UUID(session_id),
                    limit,
                )
        return [dict(row) for row in rows]

    async def question_count(self, session_id: str) -> int:
        """How many user messages (questions) the session holds."""
        count: int = await self._pool.fetchval(
            "SELECT count(*) FROM gateway.messages WHERE session_id = $1 AND role = 'user'", uuid.UUID(session_id)
        )
        return count

    async def first_question(self, session_id: str) -> str | None:
        return await self._pool.fetchval(  # type: ignore[no-any-return]
            "SELECT content FROM gateway.messages WHERE session_id = $1 AND role = 'user' ORDER BY id LIMIT 1",
            uuid.UUID(session_id),
        )

    async def retitle_unless_renamed(self, session_id: str, user_id: str, old: str, new: str) -> None:
        """Give the session the title `new` if it still has the title made from its first question (`old`):
        a title the user chose stays."""
        await self._pool.execute(
            "UPDATE gateway.sessions SET title = $4 WHERE id = $1 AND user_id = $2 AND title = $3",
            uuid.UUID(session_id),
            user_id,
            old,
            new,
        )

    async def truncate_at_question(self, session_id: str, user_id: str, turn: int) -> int:
        """Delete the session's `turn`-th question (0-based) and every message after it, if the session is the
        user's; returns how many messages were deleted."""
        result = await self._pool.execute(
            """
            DELETE FROM gateway.messages m
             USING gateway.sessions s
             WHERE m.session_id = $1 AND s.id = m.session_id AND s.user_id = $2
               AND m.id >= (SELECT id FROM gateway.messages
                             WHERE session_id = $1 AND role = 'user' ORDER BY id OFFSET $3 LIMIT 1)
            """,
            uuid.UUID(session_id),
            user_id,
            turn,
        )
        return int(result.split()[-1])

    async def model_history(self, session_id: str, limit: int) -> list[ChatMessage]:
        rows = await self.messages(session_id, limit)
        return [
            ChatMessage(
                role=row["role"],
                content=row["content"],
                tool_calls=row["tool_calls"] or [],
                tool_call_id=row["tool_call_id"],
                name=row["name"],
            )
            for row in rows
        ]

    async def record_run(self, run: RunRecord, messages: list[ChatMessage]) -> bool:
        """Store a finished run's usage and messages in one transaction; False if it was already stored."""
        async with self._pool.acquire() as connection:
            await _init_json(connection)
            async with connection.transaction():
                inserted = await connection.fetchval(
                    """
                    INSERT INTO gateway.runs (run_id, user_id, session_id, outcome, finish_reason, error_code,
                                              input_tokens, output_tokens, tool_calls, steps, started_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    ON CONFLICT (run_id) DO NOTHING
                    RETURNING run_id
                    """,
                    run.run_id,
                    run.user_id,
                    uuid.UUID(run.session_id),
                    run.outcome,
                    run.finish_reason,
                    run.error_code,
                    run.input_tokens,
                    run.output_tokens,
                    run.tool_calls,
                    run.steps,
                    run.started_at,
                )
                if inserted is None:
                    return False
                exists = await connection.fetchval(
                    "UPDATE gateway.sessions SET updated_at = now() WHERE id = $1 RETURNING id",
                    uuid.UUID(run.session_id),
                )
                if exists is None:
                    # Deleted while the run was going: keep the usage, drop the messages.
                    return True
                await connection.executemany(
                    """
                    INSERT INTO gateway.messages (session_id, role, content, tool_calls, tool_call_id, name, run_id,
                                                  created_at, grounding)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::timestamptz, now()), $9)
                    """,
                    [
                        (
                            uuid.UUID(run.session_id),
                            message.role,
                            _text(message.content) or "",
                            _clean(message.tool_calls) or None,
                            _text(message.tool_call_id),
                            _text(message.name),
                            run.run_id,
                            # The user's message keeps the time it was sent; the rest are stamped now.
                            run.started_at if index == 0 and message.role == "user" else None,
                            _clean(message.grounding),
                        )
                        for index, message in enumerate(messages)
                    ],
                )
        return True

    async def usage(self, user_id: str, since: datetime | None) -> dict[str, Any]:
        row = await self._pool.fetchrow(
            """
            SELECT count(*) AS runs,
                   coalesce(sum(input_tokens), 0) AS input_tokens,
                   coalesce(sum(output_tokens), 0) AS output_tokens,
                   coalesce(sum(tool_calls), 0) AS tool_calls,
                   count(*) FILTER (WHERE outcome = 'error') AS failed_runs,
                   max(finished_at) AS last_run_at
              FROM gateway.runs
             WHERE user_id = $1 AND ($2::timestamptz IS NULL OR finished_at >= $2)
            """,
            user_id,
            since,
        )
        assert row is not None
        return {
            "runs": int(row["runs"]),
            "failed_runs": int(row["failed_runs"]),
            "input_tokens": int(row["input_tokens"]),
            "output_tokens": int(row["output_tokens"]),
            "tool_calls": int(row["tool_calls"]),
            "last_run_at": row["last_run_at"],
            "since": since,
        }
