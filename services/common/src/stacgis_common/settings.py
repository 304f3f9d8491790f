"""Settings every service shares, read from environment variables with one prefix per service."""

from __future__ import annotations

import sys
from typing import TypeVar

from pydantic import SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

# Only for local development: the chart always supplies a generated secret.
DEV_TOKEN_SECRET = "stacgis-dev-only-internal-token-secret-change-me"


class ServiceSettings(BaseSettings):
    """Fields common to every service; subclasses set `env_prefix` (e.g. ``RASTER_``)."""

    model_config = SettingsConfigDict(env_prefix="STACGIS_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "INFO"
    internal_token_secret: SecretStr = SecretStr(DEV_TOKEN_SECRET)
    internal_token_audience: str = "stacgis-internal"
    internal_token_ttl_seconds: int = 900
    otlp_endpoint: str | None = None
    # Append finished spans as JSON lines to this file (local runs and end-to-end trace tests).
    trace_file: str | None = None
    # Host headers accepted by MCP endpoints (DNS-rebinding protection); ["*"] accepts any.
    allowed_hosts: list[str] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


S = TypeVar("S", bound=BaseSettings)


class SettingsError(SystemExit):
    """Raised at start-up when a setting is invalid; the message names the variable."""


def describe_validation_error(cls: type[BaseSettings], error: ValidationError) -> str:
    prefix = str(cls.model_config.get("env_prefix", ""))
    lines = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"])
        variable = f"{prefix}{field.split('.')[0]}".upper()
        # Never echo the offending value: it may be a secret.
        lines.append(f"invalid setting {variable}: {item['msg']}")
    return "\n".join(lines)


def load_settings(cls: type[S]) -> S:
    """Build the settings object or exit with a message naming each invalid variable."""
    try:
        return cls()
    except ValidationError as error:
        message = describe_validation_error(cls, error)
        print(message, file=sys.stderr)
        raise SettingsError(message) from None
