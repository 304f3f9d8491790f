"""Importing the server reads no settings and builds nothing: create_app(settings) does."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import stacgis_memory.__main__
import stacgis_memory.server as server
assert callable(server.create_app)
assert not hasattr(server, "app") and not hasattr(server, "settings") and not hasattr(server, "server")
"""


def test_import_reads_no_settings() -> None:
    # Settings that cannot load: no development-secret allowance and a limit that is not a number.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MEMORY_", "STACGIS_"))}
    env["MEMORY_MAX_LIMIT"] = "not-a-number"
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
