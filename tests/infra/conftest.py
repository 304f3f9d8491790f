"""Folders for the private Postgres clusters these tests start.

They live outside pytest's temporary tree: pytest resets /tmp/pytest-of-<user> to mode 0700
whenever another session starts (`make test` runs suites side by side), and the unprivileged
`pgserver` user that runs Postgres then can no longer reach its own data directory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _private_local() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="stacgis-infra-test-"))
    try:
        yield folder / "local"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def private_local() -> Iterator[Path]:
    """A fresh STACGIS_LOCAL_DIR for one test."""
    yield from _private_local()


@pytest.fixture(scope="module")
def module_private_local() -> Iterator[Path]:
    """A fresh STACGIS_LOCAL_DIR shared by one module's tests."""
    yield from _private_local()
