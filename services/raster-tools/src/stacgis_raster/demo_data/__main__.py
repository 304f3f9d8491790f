"""Build the demo COGs and static STAC catalog.

    python -m stacgis_raster.demo_data --cache .local/cache --out .local/data

Paths can also come from RASTER_DEMO_CACHE_DIR / RASTER_DEMO_OUT_DIR (for a
container Job). A second run with nothing changed returns in well under a second.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import sys
import time
from pathlib import Path

from stacgis_common.packages import FetchError
from stacgis_raster.demo_data.build import BUILDER_VERSION, build, is_up_to_date


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m stacgis_raster.demo_data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("RASTER_DEMO_CACHE_DIR", ".local/cache")),
        help="where downloaded packages are kept (env RASTER_DEMO_CACHE_DIR)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ.get("RASTER_DEMO_OUT_DIR", ".local/data")),
        help="output root; the catalog lands in OUT/stac (env RASTER_DEMO_OUT_DIR)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild every COG and the catalog")
    parser.add_argument("--offline", action="store_true", help="use only packages already in the cache, never download")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stac_dir = args.out.resolve() / "stac"
    args.out.mkdir(parents=True, exist_ok=True)
    # One build at a time per output directory (make data, a test session and a Job may overlap).
    with (args.out / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(args, stac_dir)


def _build(args: argparse.Namespace, stac_dir: Path) -> int:
    if args.force and stac_dir.exists():
        shutil.rmtree(stac_dir)
    if is_up_to_date(stac_dir):
        print(f"demo data up to date (builder v{BUILDER_VERSION}): {stac_dir / 'catalog.json'}")
        return 0
    started = time.monotonic()
    try:
        report = build(args.cache.resolve(), stac_dir, offline=args.offline)
    except FetchError as exc:
        print(f"demo data build failed: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=None))
    print(f"demo data built in {time.monotonic() - started:.1f} s: {stac_dir / 'catalog.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
