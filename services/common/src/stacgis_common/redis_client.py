"""The one way a service opens Redis (the gateway's pool and stream reader, the orchestrator's
coordination): text replies, RESP2 and a bounded connect.

RESP2 because the callers parse its reply shapes (the gateway's run store reads XREAD and pipeline
replies as RESP2 lists); redis-py 8 would speak RESP3 unless told."""

from __future__ import annotations

from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis

PROTOCOL = 2
CONNECT_TIMEOUT_SECONDS = 5.0


def redis_client(
    url: str,
    *,
    max_connections: int | None = None,
    pool_timeout_seconds: float = 20.0,
    socket_timeout: float | None = None,
    health_check_interval: int = 0,
    name: str | None = None,
) -> Redis:
    """A client of `url`. With `max_connections`, a command waits up to `pool_timeout_seconds` for a
    free connection of the bounded pool instead of failing at once. With `name`, a client of one
    connection of its own, shown under that name in CLIENT LIST (a blocking reader that must never
    wait for a pooled connection nor hold one). `socket_timeout` bounds every read (a blocking
    command's must exceed its block time); None keeps redis-py's default."""
    options: dict[str, Any] = {
        "decode_responses": True,
        "protocol": PROTOCOL,
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "health_check_interval": health_check_interval,
    }
    if socket_timeout is not None:
        options["socket_timeout"] = socket_timeout
    if name is not None:
        client: Redis = Redis.from_url(url, single_connection_client=True, client_name=name, **options)
        return client
    if max_connections is not None:
        pool = BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout_seconds, **options
        )
        return Redis.from_pool(pool)
    plain: Redis = Redis.from_url(url, **options)
    return plain
