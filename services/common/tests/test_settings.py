import subprocess
import sys

import pytest
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import DEV_TOKEN_SECRET, MIN_SECRET_CHARS, ServiceSettings, SettingsError, load_settings


class DemoSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="DEMO_", frozen=True)
    max_items: int = 10


def test_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_PORT", "not-a-number")
    with pytest.raises(SettingsError) as raised:
        load_settings(DemoSettings)
    assert "DEMO_PORT" in str(raised.value)


def test_malformed_json_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_ALLOWED_HOSTS", "[not json")
    with pytest.raises(SettingsError) as raised:
        load_settings(DemoSettings)
    assert str(raised.value) == "invalid setting DEMO_ALLOWED_HOSTS: not valid JSON"


def test_secret_value_is_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_INTERNAL_TOKEN_SECRET", "s3cr3t-value")
    settings = load_settings(DemoSettings)
    assert "s3cr3t-value" not in repr(settings)
    assert "s3cr3t-value" not in str(settings.model_dump())


def test_service_refuses_to_start_with_bad_setting() -> None:
    process = subprocess.run(
        [sys.executable, "-c", "import toy_server"],
        env={"TOY_DATABASE_URL": "x", "TOY_REDIS_URL": "y", "TOY_PORT": "-x", "PYTHONPATH": __file__.rsplit("/", 1)[0]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode != 0
    assert process.stderr.count("invalid setting TOY_PORT") == 1
    assert "Traceback" not in process.stderr


def test_real_secrets_are_accepted_and_the_switch_lets_development_ones_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STACGIS_ALLOW_DEV_SECRETS", raising=False)
    monkeypatch.setenv("DEMO_INTERNAL_TOKEN_SECRET", "r" * MIN_SECRET_CHARS)
    assert load_settings(DemoSettings).allow_dev_secrets is False
    monkeypatch.delenv("DEMO_INTERNAL_TOKEN_SECRET")
    with pytest.raises(SettingsError, match="DEMO_INTERNAL_TOKEN_SECRET"):
        load_settings(DemoSettings)
    monkeypatch.setenv("STACGIS_ALLOW_DEV_SECRETS", "1")
    assert load_settings(DemoSettings).internal_token_secret.get_secret_value() == DEV_TOKEN_SECRET
