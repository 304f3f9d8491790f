"""Write numpy arrays as Cloud-Optimized GeoTIFFs with rio-cogeo."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import rasterio
from affine import Affine
from rasterio.crs import CRS
from rasterio.io import MemoryFile
from rio_cogeo.cogeo import cog_translate, cog_validate
from rio_cogeo.profiles import cog_profiles

# Above this many pixels rio-cogeo stages through a temporary file instead of RAM.
_IN_MEMORY_LIMIT = 50_000_000


def write_cog(
    data: np.ndarray,
    dst: Path,
    *,
    transform: Affine,
    crs: CRS | str,
    nodata: float | None,
    band_descriptions: Sequence[str],
    overview_resampling: str,
    blocksize: int = 512,
) -> Path:
    """Write `data` (bands, rows, cols) as a deflate-compressed COG with internal overviews.

    Overviews use `overview_resampling` ("nearest" for classes, "average" for
    continuous values) so that coarse reads stay faithful to the data type.
    """
    if data.ndim == 2:
        data = data[np.newaxis, ...]
    count, height, width = data.shape
    if len(band_descriptions) != count:
        raise ValueError(f"{count} bands but {len(band_descriptions)} descriptions")
    dst.parent.mkdir(parents=True, exist_ok=True)
    profile = {
        "driver": "GTiff",
        "height": height,
        "width": width,
        "count": count,
        "dtype": data.dtype.name,
        "crs": crs,
        "transform": transform,
        "nodata": nodata,
    }
    out_profile = cog_profiles.get("deflate")  # type: ignore[no-untyped-call]
    out_profile.update(blockxsize=blocksize, blockysize=blocksize)
    if np.issubdtype(data.dtype, np.floating):
        out_profile["predictor"] = 3
    elif data.dtype.itemsize > 1:
        out_profile["predictor"] = 2
    partial = dst.with_name(dst.name + ".partial")
    with MemoryFile() as mem:
        with mem.open(**profile) as tmp:
            tmp.write(data)
            for index, text in enumerate(band_descriptions, start=1):
                tmp.set_band_description(index, text)
        with mem.open() as src:
            cog_translate(
                src,
                str(partial),
                out_profile,
                overview_resampling=cast(Any, overview_resampling),
                in_memory=width * height < _IN_MEMORY_LIMIT,
                quiet=True,
                # A bounded block cache keeps the largest build (the 933 MB land mask) under about 2.5 GB of RAM.
                config={
                    "GDAL_NUM_THREADS": "ALL_CPUS",
                    "GDAL_TIFF_OVR_BLOCKSIZE": str(blocksize),
                    "GDAL_CACHEMAX": 512,
                },
            )
    valid, errors, _warnings = cog_validate(str(partial), quiet=True)
    if not valid:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"{dst.name} is not a valid COG: {errors}")
    # Rename last so an interrupted build never leaves a half-written COG behind.
    os.replace(partial, dst)
    return dst


def is_complete_cog(path: Path) -> bool:
    """True when `path` exists and opens as a raster (used to skip finished work)."""
    if not path.exists():
        return False
    try:
        with rasterio.open(path) as ds:
            return bool(ds.count > 0)
    except rasterio.errors.RasterioIOError:
        return False
