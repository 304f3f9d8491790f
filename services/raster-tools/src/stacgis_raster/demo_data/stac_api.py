"""Serve the demo catalog through a real STAC API server (rustac, in-memory backend).

    STAC_API_PORT=7822 python -m stacgis_raster.demo_data.stac_api

Exports the static catalog (`STAC_API_CATALOG`, default .local/data/stac/catalog.json) into
`STAC_API_DIR` (default .local/data/stac-api) and replaces this process with `rustac serve`, so a
supervisor or test fixture stops the server by stopping this process. raster-tools then reads it
with `RASTER_STAC_URL=http://127.0.0.1:7822/`.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from stacgis_raster.demo_data.api_export import export_for_api


def rustac_binary() -> str:
    beside = Path(sys.executable).parent / "rustac"
    found = str(beside) if beside.exists() else shutil.which("rustac")
    if not found:
        raise SystemExit("rustac is not installed: pip install rustac (tests/requirements.txt pins it)")
    return found


def main() -> None:
    catalog = Path(os.environ.get("STAC_API_CATALOG", ".local/data/stac/catalog.json"))
    out = Path(os.environ.get("STAC_API_DIR", ".local/data/stac-api"))
    host = os.environ.get("STAC_API_HOST", "127.0.0.1")
    port = int(os.environ.get("STAC_API_PORT", "7822"))
    if not catalog.exists():
        raise SystemExit(f"no catalog at {catalog}: build the demo data first (make data)")
    collections, items = export_for_api(catalog, out)
    binary = rustac_binary()
    args = [binary, "serve", "--addr", f"{host}:{port}", *map(str, collections), str(items)]
    sys.stdout.flush()
    os.execv(binary, args)  # noqa: S606 - a fixed binary and arguments, no shell


if __name__ == "__main__":
    main()
