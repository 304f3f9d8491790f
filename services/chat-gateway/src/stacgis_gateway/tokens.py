"""Personal access tokens (PATs): how outside MCP clients act as a user at `/mcp/<server>`.

A token is `sgpat_` plus 32 random bytes (base64url). It is shown once, at creation; Postgres keeps
only its SHA-256 (the secret has 256 bits, so a fast hash is enough), the servers it may reach, its
expiry and whether it was revoked.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

PREFIX = "sgpat_"
TOKEN_PATTERN = re.compile(r"^sgpat_[A-Za-z0-9_-]{43}$")
# last_used_at is written at most this often per token, not on every MCP request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenRefused(Exception):
    """The bearer value is not a usable token; the message says why (safe to show its holder)."""


class TokenLimitReached(Exception):
    """The user already has the maximum number of active tokens."""


@dataclass(frozen=True)
class TokenInfo:
    id: str
    user_id: str
    name: str
    servers: list[str]
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def looks_like_token(value: str) -> bool:
    return value.startswith(PREFIX)


def _info(row: asyncpg.Record) -> TokenInfo:
    return TokenInfo(
        id=str(row["id"]),
        user_id=row["user_id"],
        name=row["name"],
        servers=list(row["servers"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
    )


COLUMNS = "id, user_id, name, servers, created_at, expires_at, last_used_at, revoked_at"


class TokenStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def create(
        self, user_id: str, name: str, servers: list[str], lifetime: timedelta, max_active: int
    ) -> tuple[str, TokenInfo]:
        """A new token for `user_id` and its row; TokenLimitReached beyond `max_active` active tokens."""
        token = new_token()
        async with self._pool.acquire() as connection, connection.transaction():
            # Serialises a user's creations so two at once cannot both pass the count.
            await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 16))", user_id)
            active = await connection.fetchval(
                "SELECT count(*) FROM gateway.access_tokens"
                " WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()",
                user_id,
            )
            if active >= max_active:
                raise TokenLimitReached(f"at most {max_active} active tokens per user; revoke one first")
            row = await connection.fetchrow(
                f"""
                INSERT INTO gateway.access_tokens (id, user_id, name, token_hash, servers, expires_at)
                VALUES ($1, $2, $3, $4, $5, now() + $6::interval)
                RETURNING {COLUMNS}
                """,
                uuid.uuid4(),
                user_id,
                name,
                token_hash(token),
                servers,
                lifetime,
            )
        assert row is not None
        return token, _info(row)

    async def list(self, user_id: str) -> list[TokenInfo]:
        """The user's tokens that are not revoked (expired ones included, so the UI can show them)."""
        rows = await self._pool.fetch(
            f"SELECT {COLUMNS} FROM gateway.access_tokens WHERE user_id = $1 AND revoked_at IS NULL"
            " ORDER BY created_at DESC, id",
            user_id,
        )
        return [_info(row) for row in rows]

    async def revoke(self, user_id: str, token_id: str) -> bool:
        """False when the user has no such token (someone else's is reported the same way)."""
        try:
            key = uuid.UUID(token_id)
        except ValueError:
            return False
        status = await self._pool.execute(
            "UPDATE gateway.access_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
            key,
            user_id,
        )
        return bool(status.endswith(" 1"))

    async def verify(self, token: str) -> TokenInfo:
        """The row of a usable token, or TokenRefused saying why."""
        if not TOKEN_PATTERN.match(token):
            raise TokenRefused("malformed access token")
        row = await self._pool.fetchrow(
            f"SELECT {COLUMNS}, now() AS now FROM gateway.access_tokens WHERE token_hash = $1", token_hash(token)
        )
        if row is None:
            raise TokenRefused("unknown access token")
        if row["revoked_at"] is not None:
            raise TokenRefused("access token revoked")
        if row["expires_at"] <= row["now"]:
            raise TokenRefused("access token expired")
        info = _info(row)
        if info.last_used_at is None or info.last_used_at < row["now"] - LAST_USED_RESOLUTION:
            await self._pool.execute(
                "UPDATE gateway.access_tokens SET last_used_at = now() WHERE id = $1", uuid.UUID(info.id)
            )
        return info
