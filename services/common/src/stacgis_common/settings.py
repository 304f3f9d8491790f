"""Settings every service shares, read from environment variables with one prefix per service, and from
files in a secrets directory (STACGIS_SECRETS_DIR) where the chart mounts its Secrets."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SecretsSettingsSource, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

# Only for local development: the chart always supplies a generated secret.
DEV_TOKEN_SECRET = "stacgis-dev-only-internal-token-secret-change-me"
# Shorter HMAC keys are guessable; the chart generates 40 characters.
MIN_SECRET_CHARS = 32
# The one switch, shared by every service, that lets the public development secrets through.
ALLOW_DEV_SECRETS_VARIABLE = "STACGIS_ALLOW_DEV_SECRETS"
# A directory of files, one per setting, each named as the setting's environment variable (e.g.
# GATEWAY_COOKIE_SECRET) and holding its value: the chart mounts its Secrets there, so that no secret is in
# the environment. Unset (local runs): environment variables only. A variable set in the environment wins
# over a file of the same name (pydantic-settings' order of sources).
SECRETS_DIR_VARIABLE = "STACGIS_SECRETS_DIR"
# (password field, URL field): a password given on its own (a Secret holding only the password, as the
# bundled Postgres and Redis have) goes into the URL, replacing any password the URL has.
URL_PASSWORDS = (("database_password", "database_url"), ("redis_password", "redis_url"))


def url_with_password(url: str, password: str) -> str:
    """`url` with `password` as its password (percent-encoded), the user name kept (none for Redis)."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


def check_secret(value: SecretStr, development_values: tuple[str, ...], info: ValidationInfo) -> SecretStr:
    """Refuse a public development secret or a short one, unless the development switch is on."""
    if info.data.get("allow_dev_secrets"):
        return value
    secret = value.get_secret_value()
    if secret in development_values:
        raise ValueError(
            f"is the public development secret; set a random secret of at least {MIN_SECRET_CHARS} characters "
            f"(or {ALLOW_DEV_SECRETS_VARIABLE}=1 for local development only)"
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(f"must be at least {MIN_SECRET_CHARS} characters long")
    return value


class ServiceSettings(BaseSettings):
    """Fields common to every service; subclasses set `env_prefix` (e.g. ``RASTER_``)."""

    model_config = SettingsConfigDict(env_prefix="STACGIS_", extra="ignore", frozen=True)

    # Declared first: the secret checks below read it. Set by `make up` and `make test`, never in a cluster.
    allow_dev_secrets: bool = Field(default=False, validation_alias=AliasChoices(ALLOW_DEV_SECRETS_VARIABLE))
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "INFO"
    internal_token_secret: SecretStr = SecretStr(DEV_TOKEN_SECRET)
    internal_token_audience: str = "stacgis-internal"
    # At most stacgis_common.auth.MAX_TOKEN_LIFETIME_SECONDS: verification refuses longer-lived tokens.
    internal_token_ttl_seconds: int = Field(default=900, ge=1, le=3600)
    otlp_endpoint: str | None = None
    # Append finished spans as JSON lines to this file (local runs and end-to-end trace tests).
    trace_file: str | None = None
    # Host headers accepted by MCP endpoints (DNS-rebinding protection); ["*"] accepts any.
    allowed_hosts: list[str] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,  # noqa: ARG003 - its directory is fixed in the class
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Read when the settings are built (not at import), so one variable serves every service.
        directory = os.environ.get(SECRETS_DIR_VARIABLE, "").strip()
        if not directory:
            return init_settings, env_settings, dotenv_settings
        if not Path(directory).is_dir():
            # pydantic-settings only warns about a missing directory; a missing mount must stop the start.
            raise SourceError(f"{SECRETS_DIR_VARIABLE}={directory} is not a directory")
        return init_settings, env_settings, dotenv_settings, SecretsSettingsSource(settings_cls, secrets_dir=directory)

    @model_validator(mode="before")
    @classmethod
    def _passwords_into_urls(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for password_field, url_field in URL_PASSWORDS:
            password = data.get(password_field)
            if url_field not in cls.model_fields or password is None:
                continue
            secret = password.get_secret_value() if isinstance(password, SecretStr) else str(password)
            if secret:
                url = data.get(url_field, cls.model_fields[url_field].default)
                out[url_field] = url_with_password(str(url), secret)
        return out

    @field_validator("internal_token_secret")
    @classmethod
    def _no_development_token_secret(cls, value: SecretStr, info: ValidationInfo) -> SecretStr:
        return check_secret(value, (DEV_TOKEN_SECRET,), info)


class EmbeddingSettings(ServiceSettings):
    """The embedding model a service calls, whose client stacgis_common.embeddings.embeddings_client builds:
    the pgvector tool servers embed stored text with it, the orchestrator ranks tools."""

    embedding_provider: Literal["ollama", "openai"] = "ollama"
    embedding_base_url: str = "http://127.0.0.1:11434"
    embedding_model: str = "all-minilm"
    embedding_dimension: int = Field(default=384, ge=1)
    embedding_api_key: SecretStr | None = None
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)
    embedding_timeout_seconds: float = Field(default=60.0, gt=0)


class PgvectorSettings(EmbeddingSettings):
    """Fields of the services that keep embedded text in Postgres + pgvector (vector-, knowledge-,
    memory-tools) and search it hybrid (vector and full text fused by reciprocal rank)."""

    database_url: str = "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis"
    # Replaces the password of database_url (see URL_PASSWORDS).
    database_password: SecretStr | None = None
    db_pool_size: int = Field(default=10, ge=1, le=100)

    # pgvector's HNSW indexes vectors of at most 2000 dimensions.
    embedding_dimension: int = Field(default=384, ge=1, le=2000)

    # Candidates each ranker (name, full text, vector) hands to the fusion.
    candidates_per_ranker: int = Field(default=50, ge=1, le=1000)
    rrf_k: int = Field(default=60, ge=1)
    # HNSW index build parameters and search breadth, chosen with tests/bench/bench_vector_index.py
    # (docs/benchmarks/pgvector.md). m and ef_construction apply when the index is built.
    hnsw_m: int = Field(default=32, ge=2, le=100)
    hnsw_ef_construction: int = Field(default=128, ge=4, le=1000)
    hnsw_ef_search: int = Field(default=64, ge=1, le=1000)


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
    except SourceError as error:
        # pydantic-settings raises this for a value that is not valid JSON where a list or mapping is expected
        # (naming the field); the secrets directory check above raises it naming its variable.
        field = re.search(r'field "([^"]+)"', str(error))
        prefix = str(cls.model_config.get("env_prefix", ""))
        if field:
            variable = f"{prefix}{field.group(1)}".upper()
            message = f"invalid setting {variable}: not valid JSON"
        else:
            message = f"invalid setting {error}"
    # SystemExit prints its message once, on the way out.
    raise SettingsError(message) from None
