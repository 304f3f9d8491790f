"""vector-tools under test: the loader run once into the session's database, then the server
as a real process, called over the real MCP transport."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stacgis_common.testing import REPO_ROOT, RunningService, run_service

# The package downloads are shared with `make up` (and kept between runs).
CACHE = Path(os.environ.get("STACGIS_TEST_CACHE", REPO_ROOT / ".local" / "cache"))
# Cities of a million or more keep the session's load to about 600 embeddings.
MIN_POPULATION = 1_000_000


def run_loader(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "stacgis_vector.load", "--cache", str(CACHE), "--min-population",
               str(MIN_POPULATION), *extra]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=900,
                          cwd=REPO_ROOT, check=False)


@pytest.fixture(scope="session")
def vector_env(tool_server_env: Callable[[str], dict[str, str]]) -> dict[str, str]:
    env = tool_server_env("VECTOR_")
    loaded = run_loader(env)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    return env


@pytest.fixture(scope="session")
def vector_server(vector_env: dict[str, str]) -> Iterator[RunningService]:
    with run_service("stacgis_vector", vector_env, int(vector_env["VECTOR_PORT"])) as service:
        yield service


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    return CACHE
