"""Secrets read from files in STACGIS_SECRETS_DIR (the chart mounts its Secrets there), by every service's
settings class: the development-secret refusal holds for files, environment variables keep working and win."""

from __future__ import annotations

import secrets
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest
import redis
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from stacgis_common.settings import (
    ALLOW_DEV_SECRETS_VARIABLE,
    DEV_TOKEN_SECRET,
    MIN_SECRET_CHARS,
    SECRETS_DIR_VARIABLE,
    SettingsError,
    load_settings,
)
from stacgis_common.testing import SERVICE_SETTINGS as SETTINGS_PATHS
from stacgis_common.testing import settings_class
from stacgis_gateway.config import DEV_COOKIE_SECRET, GatewaySettings
from stacgis_memory.settings import MemorySettings
from stacgis_raster.settings import RasterSettings

# Every service's settings class, from the one list of them.
SERVICE_SETTINGS: list[type[BaseSettings]] = [settings_class(path) for path in SETTINGS_PATHS.values()]


def prefix_of(cls: type[BaseSettings]) -> str:
    return str(cls.model_config["env_prefix"])


def secret_value(value: object) -> str:
    assert isinstance(value, SecretStr), value
    return value.get_secret_value()


@pytest.fixture
def secrets_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty secrets directory in use, with no service setting and no development switch in the environment."""
    monkeypatch.delenv(ALLOW_DEV_SECRETS_VARIABLE, raising=False)
    for cls in SERVICE_SETTINGS:
        for field in cls.model_fields:
            monkeypatch.delenv(f"{prefix_of(cls)}{field}".upper(), raising=False)
    folder = tmp_path / "secrets"
    folder.mkdir()
    monkeypatch.setenv(SECRETS_DIR_VARIABLE, str(folder))
    return folder


@pytest.mark.parametrize("cls", SERVICE_SETTINGS, ids=lambda cls: cls.__name__)
def test_every_service_reads_each_of_its_secrets_from_a_file(cls: type[BaseSettings], secrets_dir: Path) -> None:
    prefix = prefix_of(cls)
    # Files as a Kubernetes Secret volume makes them: a trailing newline is not part of the value.
    written: dict[str, str] = {}
    for field in ("internal_token_secret", "cookie_secret", "llm_api_key", "embedding_api_key"):
        if field in cls.model_fields:
            written[field] = secrets.token_urlsafe(30)
            (secrets_dir / f"{prefix}{field.upper()}").write_text(written[field] + "\n")
    settings = load_settings(cls)
    assert written, cls
    for field, value in written.items():
        assert secret_value(getattr(settings, field)) == value, field
        assert value not in repr(settings)


@pytest.mark.parametrize("cls", SERVICE_SETTINGS, ids=lambda cls: cls.__name__)
def test_a_url_file_or_a_password_file_gives_the_store_urls(cls: type[BaseSettings], secrets_dir: Path) -> None:
    prefix = prefix_of(cls)
    (secrets_dir / f"{prefix}INTERNAL_TOKEN_SECRET").write_text("t" * MIN_SECRET_CHARS)
    (secrets_dir / f"{prefix}COOKIE_SECRET").write_text("c" * MIN_SECRET_CHARS)
    stores = [name for name in ("database", "redis") if f"{name}_url" in cls.model_fields]
    if not stores:
        # raster-tools has no store: a stray password file (a shared Secret mounted whole) must
        # neither stop it from starting nor end up in any of its settings.
        (secrets_dir / f"{prefix}DATABASE_PASSWORD").write_text("stray-password")
        assert "stray-password" not in load_settings(cls).model_dump_json()
        return
    # An external store: the whole URL, password included, in one file.
    urls = {"database": "postgresql://ext:p%40ss@db.example:5432/app", "redis": "redis://:r%3Ak@cache.example:6379/2"}
    for name in stores:
        (secrets_dir / f"{prefix}{name.upper()}_URL").write_text(urls[name])
    settings = load_settings(cls)
    assert {name: getattr(settings, f"{name}_url") for name in stores} == {name: urls[name] for name in stores}
    # A bundled store: the URL without its password (not secret) in the environment, the password in a file.
    passwords = {name: f"{name}:p@ss/w%rd#?" for name in stores}
    for name in stores:
        (secrets_dir / f"{prefix}{name.upper()}_URL").unlink()
        (secrets_dir / f"{prefix}{name.upper()}_PASSWORD").write_text(passwords[name])
    plain = {"database": "postgresql://svc@db.internal:5432/stacgis", "redis": "redis://cache.internal:6379/0"}
    with pytest.MonkeyPatch.context() as patch:
        for name in stores:
            patch.setenv(f"{prefix}{name.upper()}_URL", plain[name])
        settings = load_settings(cls)
    for name in stores:
        url = urlsplit(getattr(settings, f"{name}_url"))
        expected = urlsplit(plain[name])
        assert (url.hostname, url.port, url.path) == (expected.hostname, expected.port, expected.path)
        assert (url.username or None) == expected.username  # Redis: no user name, only a password
        assert secret_value(getattr(settings, f"{name}_password")) == passwords[name]
        assert passwords[name] not in repr(settings)
    if "redis" in stores:
        # redis-py decodes the password it will send from the URL.
        client = redis.Redis.from_url(settings.redis_url)  # type: ignore[attr-defined]
        assert client.connection_pool.connection_kwargs["password"] == passwords["redis"]


@pytest.mark.asyncio
async def test_a_password_file_connects_to_postgres(pg_dsn: str, secrets_dir: Path) -> None:
    """The composed URL reaches a real server, with a password full of URL delimiters."""
    owner = await asyncpg.connect(pg_dsn)
    role, password = f"secret_files_{uuid.uuid4().hex[:8]}", "p@ss:w/rd%#?" + secrets.token_urlsafe(12)
    await owner.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        parts = urlsplit(pg_dsn)
        (secrets_dir / "GATEWAY_INTERNAL_TOKEN_SECRET").write_text("t" * MIN_SECRET_CHARS)
        (secrets_dir / "GATEWAY_COOKIE_SECRET").write_text("c" * MIN_SECRET_CHARS)
        (secrets_dir / "GATEWAY_DATABASE_PASSWORD").write_text(password)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GATEWAY_DATABASE_URL", f"postgresql://{role}@{parts.hostname}:{parts.port}{parts.path}")
            settings = load_settings(GatewaySettings)
        connection = await asyncpg.connect(settings.database_url)
        try:
            assert await connection.fetchval("SELECT current_user") == role
        finally:
            await connection.close()
        (secrets_dir / "GATEWAY_DATABASE_PASSWORD").write_text("not-" + password)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GATEWAY_DATABASE_URL", f"postgresql://{role}@{parts.hostname}:{parts.port}{parts.path}")
            wrong = load_settings(GatewaySettings)
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(wrong.database_url)
    finally:
        await owner.execute(f"DROP ROLE {role}")
        await owner.close()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GATEWAY_INTERNAL_TOKEN_SECRET", DEV_TOKEN_SECRET, "public development secret"),
        ("GATEWAY_COOKIE_SECRET", DEV_COOKIE_SECRET, "public development secret"),
        ("GATEWAY_INTERNAL_TOKEN_SECRET", "s" * (MIN_SECRET_CHARS - 1), f"at least {MIN_SECRET_CHARS} characters"),
        ("GATEWAY_COOKIE_SECRET", "s" * (MIN_SECRET_CHARS - 1), f"at least {MIN_SECRET_CHARS} characters"),
    ],
)
def test_a_development_or_short_secret_in_a_file_is_refused(
    secrets_dir: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    (secrets_dir / "GATEWAY_INTERNAL_TOKEN_SECRET").write_text("t" * MIN_SECRET_CHARS)
    (secrets_dir / "GATEWAY_COOKIE_SECRET").write_text("c" * MIN_SECRET_CHARS)
    (secrets_dir / variable).write_text(value + "\n")
    with pytest.raises(SettingsError) as refused:
        load_settings(GatewaySettings)
    assert f"invalid setting {variable}: " in str(refused.value) and message in str(refused.value)
    assert value not in str(refused.value)
    # The development switch lets it through, as it does for an environment variable.
    monkeypatch.setenv(ALLOW_DEV_SECRETS_VARIABLE, "1")
    field = variable.removeprefix("GATEWAY_").lower()
    assert secret_value(getattr(load_settings(GatewaySettings), field)) == value


def test_the_environment_wins_over_a_file_and_works_without_one(
    secrets_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_file, from_env = "f" * MIN_SECRET_CHARS, "e" * MIN_SECRET_CHARS
    (secrets_dir / "RASTER_INTERNAL_TOKEN_SECRET").write_text(from_file)
    assert secret_value(load_settings(RasterSettings).internal_token_secret) == from_file
    monkeypatch.setenv("RASTER_INTERNAL_TOKEN_SECRET", from_env)
    assert secret_value(load_settings(RasterSettings).internal_token_secret) == from_env
    # No secrets directory (local runs): the environment alone, as before.
    (secrets_dir / "RASTER_INTERNAL_TOKEN_SECRET").unlink()
    monkeypatch.delenv(SECRETS_DIR_VARIABLE)
    assert secret_value(load_settings(RasterSettings).internal_token_secret) == from_env
    monkeypatch.delenv("RASTER_INTERNAL_TOKEN_SECRET")
    with pytest.raises(SettingsError, match=r"RASTER_INTERNAL_TOKEN_SECRET: .*public development secret"):
        load_settings(RasterSettings)


def test_a_secrets_directory_that_is_not_there_stops_the_start(
    secrets_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Secret volume that did not mount must not leave the service on its defaults."""
    missing = secrets_dir / "not-mounted"
    monkeypatch.setenv(SECRETS_DIR_VARIABLE, str(missing))
    with pytest.raises(SettingsError) as refused:
        load_settings(MemorySettings)
    assert str(refused.value) == f"invalid setting {SECRETS_DIR_VARIABLE}={missing} is not a directory"
