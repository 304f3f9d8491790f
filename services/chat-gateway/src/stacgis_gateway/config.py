"""Gateway settings, read from `GATEWAY_*` environment variables (and secret files, see stacgis_common.settings)."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from stacgis_common.settings import ServiceSettings, check_secret

# Only for local development; deployments supply their own (the chart generates one).
DEV_COOKIE_SECRET = "stacgis-dev-only-cookie-secret-change-me"

AuthMode = Literal["anonymous", "trusted-header", "jwt"]
# The MCP tool servers outside clients reach through `/mcp/<name>` with a personal access token.
DEFAULT_MCP_SERVERS = {
    "raster": "http://127.0.0.1:8011/mcp",
    "vector": "http://127.0.0.1:8012/mcp",
    "knowledge": "http://127.0.0.1:8013/mcp",
    "memory": "http://127.0.0.1:8014/mcp",
}


def _split_list(value: Any) -> Any:
    """Accept a JSON list or a comma-separated string (friendlier in env files)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class GatewaySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", frozen=True)

    port: int = 8000
    database_url: str = "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis"
    redis_url: str = "redis://127.0.0.1:56379/0"
    # Replace the passwords of the two URLs (a file in the secrets directory; see URL_PASSWORDS).
    database_password: SecretStr | None = None
    redis_password: SecretStr | None = None
    # Prepended to every Redis key, so several deployments can share one Redis.
    redis_key_prefix: str = ""
    # Commands of requests and run tasks share the pool (SSE streams hold none: one reader per process
    # follows them all); when all are taken a command waits this long for one instead of failing.
    redis_max_connections: int = Field(default=4000, ge=10)
    redis_pool_timeout_seconds: float = Field(default=10.0, gt=0)
    orchestrator_url: str = "http://127.0.0.1:8001"
    # Seconds the orchestrator may stay silent mid-run (model latency, approvals) before the run fails.
    orchestrator_read_timeout_seconds: float = Field(default=300.0, gt=0)

    auth_mode: AuthMode = "anonymous"
    cookie_secret: SecretStr = SecretStr(DEV_COOKIE_SECRET)
    cookie_name: str = "stacgis_uid"
    cookie_secure: bool = False
    cookie_max_age_seconds: int = Field(default=365 * 24 * 3600, gt=0)
    # Proxies (CIDRs) believed about the client: their identity headers (trusted-header mode) and the
    # client address they pass in X-Forwarded-For (rate limits on requests without an identity). None
    # by default, loopback included: anything on the gateway's host could otherwise claim any user.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Header(s) naming the user (oauth2-proxy: X-Auth-Request-User or X-Forwarded-User). The proxy must
    # set or clear each one; present headers that disagree are refused.
    trusted_user_header: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["X-Auth-Request-User", "X-Forwarded-User"]
    )
    jwks_url: str | None = None
    jwt_public_key: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["RS256", "ES256"])
    jwt_user_claim: str = "sub"
    jwks_cache_seconds: int = Field(default=300, gt=0)

    max_concurrent_runs: int = Field(default=20, ge=1)
    # Runs one user may have going at once (each session runs one at a time): one client cannot take
    # every slot. Refused with 429, since waiting for one's own run frees a slot.
    max_concurrent_runs_per_user: int = Field(default=3, ge=1)
    # A slot not refreshed for this long belongs to a dead replica and is pruned.
    slot_ttl_seconds: float = Field(default=60.0, ge=1)
    session_ttl_seconds: int = Field(default=3600, ge=1)
    heartbeat_seconds: float = Field(default=15.0, gt=0)
    max_message_chars: int = Field(default=8000, ge=1)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_geojson_bytes: int = Field(default=262_144, ge=64)
    max_title_chars: int = Field(default=200, ge=1)
    # A conversation's saved map (view, layers, selection), as JSON.
    max_map_state_bytes: int = Field(default=524_288, ge=1024)
    # Runs a user may start per minute; 0 disables the limit.
    rate_limit_per_minute: int = Field(default=30, ge=0)
    # Requests without an identity (no valid cookie: each gets a fresh anonymous id) one client address
    # may make per minute, so dropping the cookie gains nothing; 0 disables. A first page load makes a
    # few such requests in parallel, and several people may share one address.
    anonymous_rate_limit_per_minute: int = Field(default=60, ge=0)
    # A request body must keep arriving (at most this long between two reads) and be complete within the
    # deadline; else 408. The ingress passes bodies through unbuffered, so these bound slow clients.
    body_read_timeout_seconds: float = Field(default=10.0, gt=0)
    body_deadline_seconds: float = Field(default=30.0, gt=0)
    # Events queued in memory for one SSE response; a client that falls this far behind is closed at the
    # last event it got (it resumes from there) so it never slows the reader or other streams.
    stream_queue_max_events: int = Field(default=2000, ge=10)
    # Entries the process's reader takes per run stream and XREAD.
    stream_read_count: int = Field(default=500, ge=1)
    run_stream_maxlen: int = Field(default=10_000, ge=100)
    # How long a finished run's events stay available for resuming.
    run_stream_ttl_seconds: int = Field(default=900, ge=1)
    # Past messages sent to the orchestrator with each new message.
    history_max_messages: int = Field(default=50, ge=0)
    # How long POST /chat/ waits for the whole answer.
    sync_timeout_seconds: float = Field(default=300.0, gt=0)
    # On shutdown, running runs get this long to finish before they are ended with an error.
    shutdown_grace_seconds: float = Field(default=10.0, ge=0)
    db_pool_max_size: int = Field(default=10, ge=1)
    # A finished run's history write is retried this long before it is parked in Redis (Postgres down),
    # and parked writes are flushed to Postgres every `history_flush_seconds`.
    history_retry_seconds: float = Field(default=10.0, ge=0)
    history_flush_seconds: float = Field(default=5.0, gt=0)

    # Outside MCP clients (`/mcp/<server>`, personal access tokens): the servers, the longest token
    # lifetime, active tokens per user, the body and total time of one forwarded request, and the
    # public URL of the gateway (the `resource` of the OAuth metadata; unset: taken from the request).
    mcp_servers: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MCP_SERVERS))
    mcp_token_max_days: int = Field(default=90, ge=1, le=3650)
    mcp_tokens_per_user: int = Field(default=20, ge=1)
    mcp_max_body_bytes: int = Field(default=1_048_576, ge=1024)
    mcp_timeout_seconds: float = Field(default=300.0, gt=0)
    # MCP requests one user's clients may make per minute over all replicas (0: no limit).
    mcp_requests_per_minute: int = Field(default=600, ge=0)
    public_base_url: str | None = None

    # The map's place search box and city names: vector-tools' internal place search, labels and loading
    # status (unset: the `vector` MCP server's URL without /mcp), how long one request may take, and
    # searches, city name requests (one per map move) and status polls (one each 5 s while the names
    # load, from each open tab) per user and minute (0: no limit).
    vector_tools_url: str | None = None
    place_search_timeout_seconds: float = Field(default=5.0, gt=0, le=60)
    place_search_per_minute: int = Field(default=120, ge=0)
    place_labels_per_minute: int = Field(default=240, ge=0)
    place_status_per_minute: int = Field(default=60, ge=0)

    # How long the orchestrator's model list (GET /models, and the check of a message's `model`) is kept.
    models_cache_seconds: float = Field(default=30.0, ge=0)
    model_label: str = "qwen3"
    provider_label: str = "ollama"
    trace_file: str | None = None

    @field_validator("trusted_proxies", "trusted_user_header", "jwt_algorithms", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("cookie_secret")
    @classmethod
    def _no_development_cookie_secret(cls, value: SecretStr, info: ValidationInfo) -> SecretStr:
        return check_secret(value, (DEV_COOKIE_SECRET,), info)

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_servers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,31}", name):
                raise ValueError(f"MCP server name {name!r} must be 1-32 lowercase letters, digits, '-' or '_'")
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"MCP server {name!r}: {url!r} is not an http(s) URL")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for item in value:
            ipaddress.ip_network(item, strict=False)  # raises ValueError naming the bad entry
        return value

    @model_validator(mode="after")
    def _jwt_complete(self) -> GatewaySettings:
        if self.auth_mode == "jwt":
            if not (self.jwks_url or self.jwt_public_key):
                raise ValueError("GATEWAY_AUTH_MODE=jwt needs GATEWAY_JWKS_URL or GATEWAY_JWT_PUBLIC_KEY")
            if not self.jwt_issuer or not self.jwt_audience:
                raise ValueError("GATEWAY_AUTH_MODE=jwt needs GATEWAY_JWT_ISSUER and GATEWAY_JWT_AUDIENCE")
        if self.auth_mode == "trusted-header" and not self.trusted_user_header:
            raise ValueError("GATEWAY_AUTH_MODE=trusted-header needs GATEWAY_TRUSTED_USER_HEADER")
        if self.auth_mode == "trusted-header" and not self.trusted_proxies:
            raise ValueError("GATEWAY_AUTH_MODE=trusted-header needs GATEWAY_TRUSTED_PROXIES (the proxy's addresses)")
        return self

    @property
    def places_url(self) -> str | None:
        """Base URL of vector-tools (its /places endpoints), or None when no vector server is configured."""
        if self.vector_tools_url:
            return self.vector_tools_url.rstrip("/")
        mcp = self.mcp_servers.get("vector")
        return mcp.rstrip("/").removesuffix("/mcp") if mcp else None

    @property
    def gate_refresh_seconds(self) -> float:
        """How often a running run refreshes its gate slot and locks: well inside the slot TTL."""
        return max(0.2, min(self.slot_ttl_seconds / 3, 10.0))
