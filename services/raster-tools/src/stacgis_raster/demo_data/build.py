"""Orchestrates a demo-data build: fetch, convert to COG, write the catalog, stamp it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from stacgis_common.packages import PackageCache
from stacgis_raster.demo_data.cog import is_complete_cog, write_cog
from stacgis_raster.demo_data.cubes import climate_cube, climate_zarr
from stacgis_raster.demo_data.dataset_builder import collection_specs
from stacgis_raster.demo_data.scenes import climate_tiles, landsat_tiles
from stacgis_raster.demo_data.sources import ALL_PACKAGES
from stacgis_raster.demo_data.stac_build import write_catalog

# Bump when the output of the builder changes, so existing builds are redone.
BUILDER_VERSION = 9
STAMP_NAME = "build-info.json"


def is_up_to_date(stac_dir: Path) -> bool:
    stamp = stac_dir / STAMP_NAME
    if not (stac_dir / "catalog.json").exists() or not stamp.exists():
        return False
    try:
        info = json.loads(stamp.read_text())
    except json.JSONDecodeError:
        return False
    if info.get("builder_version") != BUILDER_VERSION:
        return False
    return all((stac_dir / rel).exists() for rel in info.get("assets", []))


def build(cache_dir: Path, stac_dir: Path, *, offline: bool = False) -> dict[str, Any]:
    cache = PackageCache(cache_dir, offline=offline)
    print(f"fetching {len(ALL_PACKAGES)} packages into {cache.downloads}", flush=True)
    for package in ALL_PACKAGES:
        cache.archive(package)
    specs = collection_specs(cache, stac_dir)
    assets: list[str] = []
    for spec in specs:
        for item in spec.items:
            rel = str(item.cog.relative_to(stac_dir))
            assets.append(rel)
            if is_complete_cog(item.cog):
                continue
            started = time.monotonic()
            raster = item.load()
            write_cog(
                raster.data,
                item.cog,
                transform=raster.transform,
                crs=raster.crs,
                nodata=raster.nodata,
                band_descriptions=[b.name for b in spec.bands],
                overview_resampling=spec.overview_resampling,
            )
            del raster
            print(f"  cog {rel} ({time.monotonic() - started:.1f} s)", flush=True)
    by_id = {spec.id: spec for spec in specs}
    started = time.monotonic()
    scenes = [
        landsat_tiles(stac_dir, by_id["landsat7-olinda"]),
        climate_tiles(stac_dir, by_id["bcsd-precipitation-1999"], by_id["bcsd-temperature-1999"]),
        climate_cube(stac_dir, by_id["bcsd-precipitation-1999"], by_id["bcsd-temperature-1999"]),
        climate_zarr(stac_dir, by_id["bcsd-precipitation-1999"], by_id["bcsd-temperature-1999"]),
    ]
    for collection, cogs in scenes:
        assets.extend(str(cog.relative_to(stac_dir)) for cog in cogs)
        print(f"  {collection.id}: {len(cogs)} files", flush=True)
    print(f"  scene collections in {time.monotonic() - started:.1f} s", flush=True)
    print(f"writing STAC catalog for {len(specs) + len(scenes)} collections", flush=True)
    catalog = write_catalog(specs, stac_dir, extra=[collection for collection, _ in scenes])
    report = {
        "builder_version": BUILDER_VERSION,
        "catalog": str(catalog.relative_to(stac_dir)),
        "collections": {
            **{spec.id: len(spec.items) for spec in specs},
            **{c.id: len(list(c.get_items())) for c, _ in scenes},
        },
        "packages": {p.spec: cache.sha256(p) for p in ALL_PACKAGES},
        "assets": assets,
    }
    (stac_dir / STAMP_NAME).write_text(json.dumps(report, indent=2))
    return {k: v for k, v in report.items() if k != "assets"}
