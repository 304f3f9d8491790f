"""A minimal tool server built with the shared bootstrap, for testing the bootstrap itself."""

from __future__ import annotations

import os

import asyncpg
import redis.asyncio as aioredis
from mcp.server.mcpserver.exceptions import ToolError
from pydantic_settings import SettingsConfigDict

from stacgis_common.auth import current_identity
from stacgis_common.http_app import serve
from stacgis_common.mcp_app import build_tool_server_app, create_mcp_server
from stacgis_common.settings import ServiceSettings, load_settings


class ToySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="TOY_", frozen=True)
    database_url: str
    redis_url: str


settings = load_settings(ToySettings)
server = create_mcp_server("toy-tools", settings)


@server.tool()
def whoami() -> dict[str, str | None]:
    """Return the verified caller."""
    identity = current_identity()
    return {"user_id": identity.user_id, "session_id": identity.session_id}


@server.tool()
def check_name(name: str) -> str:
    """Reject every name, quoting it back (as real argument errors do)."""
    raise ToolError(f"name: {name!r} is not allowed")


async def postgres_answers() -> None:
    connection = await asyncpg.connect(settings.database_url, timeout=1.5)
    await connection.close()


async def redis_answers() -> None:
    client = aioredis.Redis.from_url(settings.redis_url, socket_timeout=1.5, socket_connect_timeout=1.5)
    try:
        await client.ping()
    finally:
        await client.aclose()


app = build_tool_server_app(
    server,
    settings,
    readiness={"postgres": postgres_answers, "redis": redis_answers},
    trace_file=os.environ.get("TOY_TRACE_FILE"),
)

if __name__ == "__main__":
    serve(app, settings)
