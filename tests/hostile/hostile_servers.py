"""The tool servers under test and the canary server hostile ids point at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from stacgis_common.testing import RunningService

# Each tool server and the fixture (of its own suite) that starts it, first one present wins.
SERVER_FIXTURES: dict[str, tuple[str, ...]] = {
    "raster-tools": ("raster_service",),
    "vector-tools": ("vector_server",),
    "knowledge-tools": ("knowledge_server", "knowledge_service"),
    "memory-tools": ("memory_server", "memory_service"),
}

# Per-tool figures of the hostile runs, printed at the end of the session (conftest).
SUMMARY: list[dict[str, Any]] = []


@dataclass
class Canary:
    """A loopback HTTP server that hostile ids and URLs point at: any request to it is a finding."""

    port: int
    hits: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def server_url(request: pytest.FixtureRequest, name: str) -> str:
    """Base URL of a running tool server, started through its own suite's fixture."""
    for fixture in SERVER_FIXTURES[name]:
        try:
            value = request.getfixturevalue(fixture)
        except pytest.FixtureLookupError:
            continue
        if isinstance(value, RunningService):
            return value.url
        if isinstance(value, str):
            return value
        url = getattr(value, "url", None)
        if isinstance(url, str):
            return url
        raise TypeError(f"fixture {fixture} gave {type(value).__name__}, not a URL or a RunningService")
    pytest.fail(f"{name}: none of the fixtures {SERVER_FIXTURES[name]} exists in its test suite")
