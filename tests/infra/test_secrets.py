"""Services refuse the public development secrets and short ones unless the development switch is on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from stacgis_common.settings import DEV_TOKEN_SECRET, MIN_SECRET_CHARS


def _start_without_the_switch(module: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "STACGIS_ALLOW_DEV_SECRETS" and "SECRET" not in k}
    return subprocess.run(
        [sys.executable, "-m", module], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("module", "variable"),
    [("stacgis_gateway", "GATEWAY_INTERNAL_TOKEN_SECRET"), ("stacgis_memory", "MEMORY_INTERNAL_TOKEN_SECRET")],
)
def test_services_refuse_the_development_secret_unless_allowed(module: str, variable: str) -> None:
    result = _start_without_the_switch(module, {})
    assert result.returncode != 0
    assert f"invalid setting {variable}: " in result.stderr and "development secret" in result.stderr
    # The message names the variable and the fix, never the value.
    assert DEV_TOKEN_SECRET not in result.stderr


def test_gateway_refuses_a_short_or_development_cookie_secret() -> None:
    good = "k" * MIN_SECRET_CHARS
    short = _start_without_the_switch(
        "stacgis_gateway", {"GATEWAY_INTERNAL_TOKEN_SECRET": good, "GATEWAY_COOKIE_SECRET": "x" * 8}
    )
    assert short.returncode != 0
    assert "invalid setting GATEWAY_COOKIE_SECRET: " in short.stderr and "at least 32" in short.stderr
    assert "GATEWAY_INTERNAL_TOKEN_SECRET" not in short.stderr
    default = _start_without_the_switch("stacgis_gateway", {"GATEWAY_INTERNAL_TOKEN_SECRET": good})
    assert "invalid setting GATEWAY_COOKIE_SECRET: " in default.stderr and "development secret" in default.stderr
