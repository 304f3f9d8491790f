"""Multi-scene demo collections: real rasters cut into a grid of items with one asset per band
(`scene_writer`), so item search, paging, mosaics and band math meet real work. What is derived
(the tiling, and `eo:cloud_cover` of the Landsat tiles) is said in each collection's description.
The data cubes of the same grids are in `cubes`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pystac
from affine import Affine

from stacgis_raster.demo_data.cubes import PRECIPITATION_RENDER
from stacgis_raster.demo_data.model import BandSpec, CollectionSpec, RasterArray
from stacgis_raster.demo_data.scene_writer import BRIGHT_BLUE_DN, SceneWriter, grid_tiles


def landsat_tiles(
    stac_dir: Path, scene: CollectionSpec, nrows: int = 12, ncols: int = 12
) -> tuple[pystac.Collection, list[Path]]:
    """The Landsat 7 Olinda scene as a grid of overlapping scene items, one COG per band."""
    source = scene.items[0]
    raster = source.load()
    assert source.datetime is not None
    spec = CollectionSpec(
        id="landsat7-olinda-scenes",
        title="Landsat 7 ETM+ Olinda scene as 144 tiles (one asset per band)",
        description=(
            "The Landsat 7 ETM+ scene of collection landsat7-olinda (Olinda and Recife, Brazil; 28.5 m; "
            "8-bit digital numbers) cut into a 12 x 12 grid of items that overlap their neighbours by "
            "4 pixels, each with one Cloud-Optimized GeoTIFF per band named by its common name (blue, "
            "green, red, nir, swir16, swir22), as Earth Search and Planetary Computer lay out Landsat. "
            "For item search, mosaics and band math such as NDVI = (nir - red) / (nir + red). "
            "Derived, not from USGS: the tiling, and eo:cloud_cover = the percentage of a tile's pixels "
            f"with band 1 DN >= {BRIGHT_BLUE_DN} (bright, cloud-like), and the cloud_mask asset marking those "
            "pixels. The acquisition date is not "
            "documented by the source; every item carries the date of the packaged file."
        ),
        keywords=[*scene.keywords, "scenes", "tiles", "mosaic", "band math"],
        license=scene.license,
        providers=scene.providers,
        sources=scene.sources,
        bands=scene.bands,
        items=[],
        time_resolved=False,
        derived_from=scene.id,
        notes=[*scene.notes, f"eo:cloud_cover is derived: share of pixels with band 1 DN >= {BRIGHT_BLUE_DN}."],
    )
    writer = SceneWriter(stac_dir, spec, resolution_m=28.5)
    _, height, width = raster.data.shape
    for tile in grid_tiles(height, width, nrows, ncols, overlap=4):
        data = raster.data[:, tile.rows, tile.cols]
        transform = raster.transform @ Affine.translation(tile.cols.start, tile.rows.start)
        cloud = round(100.0 * float((data[0] >= BRIGHT_BLUE_DN).mean()), 2)
        writer.add(
            f"olinda-r{tile.row:02d}-c{tile.col:02d}",
            RasterArray(data, transform, raster.crs, raster.nodata),
            source.datetime,
            properties={"eo:cloud_cover": cloud, "platform": "landsat-7", "instruments": ["etm+"]},
            cloud_mask=data[0] >= BRIGHT_BLUE_DN,
        )
    clouds = [float(i.properties["eo:cloud_cover"]) for i in writer.items]
    collection = writer.collection(
        {"expression": "ndvi", "rescale": [[-1, 1]], "colormap_name": "rdylgn"},
        summaries={"eo:cloud_cover": {"minimum": min(clouds), "maximum": max(clouds)}},
    )
    return collection, writer.cogs


def climate_tiles(
    stac_dir: Path, precipitation: CollectionSpec, temperature: CollectionSpec, nrows: int = 2, ncols: int = 4
) -> tuple[pystac.Collection, list[Path]]:
    """The 1999 monthly climate grids as items per tile and month, with a `pr` and a `tas` asset."""
    spec = CollectionSpec(
        id="bcsd-1999-scenes",
        title="Monthly precipitation and temperature 1999 as tiled items (south-eastern United States)",
        description=(
            "The monthly grids of collections bcsd-precipitation-1999 (pr, mm/month) and "
            "bcsd-temperature-1999 (tas, degC) cut into a 2 x 4 grid of tiles overlapping by 2 cells: one "
            "item per tile and month with one asset per variable, 1/8 degree over Tennessee, Kentucky, "
            "North Carolina, Virginia and neighbours. Real monthly values; the tiling is derived. For "
            "mosaics over tiles, temporal composites and time series over items."
        ),
        keywords=["precipitation", "temperature", "climate", "monthly", "scenes", "tiles", "1999", "bcsd"],
        license=precipitation.license,
        providers=precipitation.providers,
        sources=precipitation.sources,
        bands=[
            BandSpec("pr", precipitation.bands[0].description, precipitation.bands[0].unit),
            BandSpec("tas", temperature.bands[0].description, temperature.bands[0].unit),
        ],
        items=[],
        time_resolved=True,
        derived_from=f"{precipitation.id}, {temperature.id}",
        notes=precipitation.notes,
    )
    writer = SceneWriter(stac_dir, spec, resolution_m=12500.0)
    for pr_month, tas_month in zip(precipitation.items, temperature.items, strict=True):
        pr, tas = pr_month.load(), tas_month.load()
        assert pr_month.datetime is not None
        data = np.concatenate([pr.data, tas.data]).astype("float32")
        _, height, width = data.shape
        for tile in grid_tiles(height, width, nrows, ncols, overlap=2):
            cut = data[:, tile.rows, tile.cols]
            if pr.nodata is not None and bool((cut == pr.nodata).all()):
                continue  # all ocean: no scene there
            writer.add(
                f"bcsd-1999-{pr_month.datetime:%m}-r{tile.row}-c{tile.col}",
                RasterArray(
                    cut, pr.transform @ Affine.translation(tile.cols.start, tile.rows.start), pr.crs, pr.nodata
                ),
                pr_month.datetime,
                start=pr_month.start,
                end=pr_month.end,
            )
    return writer.collection(PRECIPITATION_RENDER), writer.cogs
