"""Fixtures shared by the test suites of the services (collected for every tests/ folder below).

The tool servers that embed text (vector-, knowledge-, memory-tools) need a real embedding
server: this starts the local model server (all-MiniLM-L6-v2 behind Ollama's /api/embed)
once per test session on a free port.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from stacgis_common.testing import free_port, run_service

# Set to the URL of an already running model server (e.g. the one `make up` starts) to reuse it.
REUSE_ENV = "STACGIS_TEST_EMBEDDING_URL"


@pytest.fixture(scope="session")
def embedding_server() -> Iterator[str]:
    """Base URL of a model server answering /api/embed with model `all-minilm` (384 dimensions)."""
    reuse = os.environ.get(REUSE_ENV)
    if reuse:
        yield reuse.rstrip("/")
        return
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted", "HF_HUB_OFFLINE": "1"}
    with run_service("stacgis_model_server", env, port) as service:
        yield service.url


ToolEnv = Callable[[str], dict[str, str]]


@pytest.fixture(scope="session")
def tool_server_env(pg_dsn: str, embedding_server: str) -> ToolEnv:
    """Makes the environment of a pgvector tool server under test, on a fresh free port:
    `tool_server_env("VECTOR_")` -> {"VECTOR_PORT": ..., "VECTOR_DATABASE_URL": ..., ...}."""

    def make(prefix: str) -> dict[str, str]:
        return {
            f"{prefix}PORT": str(free_port()),
            f"{prefix}DATABASE_URL": pg_dsn,
            f"{prefix}EMBEDDING_PROVIDER": "ollama",
            f"{prefix}EMBEDDING_BASE_URL": embedding_server,
            f"{prefix}EMBEDDING_MODEL": "all-minilm",
            f"{prefix}EMBEDDING_DIMENSION": "384",
        }

    return make
