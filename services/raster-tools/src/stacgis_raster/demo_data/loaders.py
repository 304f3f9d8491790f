"""How each packaged file becomes an array: every value comes from the file; the only
transformations are type conversion, unit scaling that the source declares, reordering of
longitudes to -180..180, and the NDVI band ratio."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import numpy as np
import rasterio
from rasterio.crs import CRS
from rasterio.transform import from_origin

from stacgis_raster.demo_data.model import ClassSpec, RasterArray

FLOAT_NODATA = -9999.0
INT16_NODATA = -32768
WGS84 = CRS.from_epsg(4326)
# The variables of the OISST file, in band order: name, description, unit.
OISST_VARIABLES = (
    ("sst", "Daily sea surface temperature", "degC"),
    ("anom", "Daily sea surface temperature anomaly", "degC"),
    ("err", "Estimated error standard deviation of the analysed SST", "degC"),
    ("ice", "Sea ice concentration", "%"),
)


def read_geotiff(path: Path, bands: list[int] | None = None) -> RasterArray:
    with rasterio.open(path) as ds:
        data = ds.read(bands) if bands else ds.read()
        return RasterArray(data, ds.transform, ds.crs, ds.nodata)


def geotiff_float32(path: Path) -> RasterArray:
    raw = read_geotiff(path)
    return RasterArray(raw.data.astype("float32"), raw.transform, raw.crs, FLOAT_NODATA)


def geotiff_classes(path: Path) -> RasterArray:
    raw = read_geotiff(path)
    # Value 0 has no class name in the attribute table: it is the area outside Puerto Rico.
    return RasterArray(raw.data, raw.transform, raw.crs, 0)


def landsat_ndvi(path: Path) -> RasterArray:
    """(B4 - B3) / (B4 + B3) of the six-band Landsat 7 file (bands 3 and 4 are red and near infrared)."""
    raw = read_geotiff(path, [3, 4])
    red = raw.data[0].astype("float32")
    nir = raw.data[1].astype("float32")
    total = nir + red
    ndvi = np.full(red.shape, FLOAT_NODATA, dtype="float32")
    np.divide(nir - red, total, out=ndvi, where=total > 0)
    return RasterArray(ndvi[np.newaxis], raw.transform, raw.crs, FLOAT_NODATA)


def oisst(path: Path) -> RasterArray:
    layers = []
    transform = None
    for var, _text, _unit in OISST_VARIABLES:
        with rasterio.open(f"netcdf:{path}:{var}") as ds:
            raw = ds.read(1)
            scale, offset = ds.scales[0], ds.offsets[0]
            transform = ds.transform
            nodata = ds.nodata
        values = np.where(raw == nodata, FLOAT_NODATA, raw * scale + offset).astype("float32")
        layers.append(values)
    stacked = np.stack(layers)
    assert transform is not None
    # The file runs 0..360 east; roll it so longitudes read -180..180.
    shift = round(180 / transform.a)
    stacked = np.roll(stacked, shift, axis=2)
    west = transform.c - 180
    return RasterArray(stacked, from_origin(west, transform.f, transform.a, -transform.e), WGS84, FLOAT_NODATA)


def jacksboro_npz(path: Path) -> RasterArray:
    with np.load(path) as npz:
        elevation = npz["elevation"]
        west, east = float(npz["xmin"]), float(npz["xmax"])
        # The file labels its latitude bounds the wrong way round (ymin > ymax).
        north = max(float(npz["ymin"]), float(npz["ymax"]))
        south = min(float(npz["ymin"]), float(npz["ymax"]))
    rows, cols = elevation.shape
    transform = from_origin(west, north, (east - west) / cols, (north - south) / rows)
    return RasterArray(elevation[np.newaxis].astype("int16"), transform, WGS84, INT16_NODATA)


def vega_grid_json(path: Path) -> RasterArray:
    grid = json.loads(path.read_text())
    width, height = int(grid["width"]), int(grid["height"])
    values = np.asarray(grid["values"], dtype="int32").reshape(height, width)
    sx, sy = grid["scale"]
    west, north = grid["translate"]
    transform = from_origin(float(west), float(north), abs(float(sx)), abs(float(sy)))
    return RasterArray(values[np.newaxis].astype("int16"), transform, WGS84, INT16_NODATA)


def land_mask_npz(path: Path) -> RasterArray:
    with np.load(path) as npz:
        ocean = npz["mask"]
        lat, lon = npz["lat"], npz["lon"]
    # lat/lon hold the north-west corner of each cell (the package indexes by truncation).
    step = float(lon[1] - lon[0])
    transform = from_origin(float(lon[0]), float(lat[0]), step, step)
    land = np.logical_not(ocean, out=ocean).view(np.uint8)  # in place: the grid is 933 MB
    return RasterArray(land[np.newaxis], transform, WGS84, None)


def read_class_table(aux_xml: Path) -> list[ClassSpec]:
    """Classes with a name in a GDAL PAM raster attribute table (RGB + name columns)."""
    root = ET.parse(aux_xml).getroot()  # noqa: S314 - a file of a pinned, checksummed package
    table = root.find(".//GDALRasterAttributeTable")
    if table is None:
        raise ValueError(f"{aux_xml} has no raster attribute table")
    fields = {f.findtext("Name"): int(f.get("index", "0")) for f in table.findall("FieldDefn")}
    name_col = next(i for n, i in fields.items() if n and "class" in n.lower())
    first = int(table.get("Row0Min", "0"))
    classes = []
    for row in table.findall("Row"):
        values = [f.text or "" for f in row.findall("F")]
        name = values[name_col].strip()
        if not name:
            continue
        rgba = tuple(int(values[fields[c]]) for c in ("Red", "Green", "Blue", "Opacity"))
        classes.append(ClassSpec(first + int(row.get("index", "0")), name, (rgba[0], rgba[1], rgba[2], rgba[3])))
    return classes


def netcdf_months(path: Path, var: str) -> list[tuple[dt.datetime, dt.datetime, dt.datetime]]:
    """(first instant, last instant, stamp) of each monthly band of `var`."""
    with rasterio.open(f"netcdf:{path}:{var}") as ds:
        units = ds.tags()["time#units"]
        origin = dt.datetime.fromisoformat(units.split("since", 1)[1].strip()).replace(tzinfo=dt.UTC)
        offsets = [float(ds.tags(b)["NETCDF_DIM_time"]) for b in ds.indexes]
    months = []
    for days in offsets:
        stamp = origin + dt.timedelta(days=days)
        start = stamp.replace(day=1, hour=0, minute=0, second=0)
        following = (start + dt.timedelta(days=32)).replace(day=1)
        months.append((start, following - dt.timedelta(seconds=1), stamp))
    return months


def netcdf_band_loader(path: Path, var: str, band: int) -> Callable[[], RasterArray]:
    def load() -> RasterArray:
        with rasterio.open(f"netcdf:{path}:{var}") as ds:
            raw = ds.read(band)
            nodata = ds.nodata
            transform = ds.transform
        values = np.where((raw == nodata) | ~np.isfinite(raw), FLOAT_NODATA, raw).astype("float32")
        # CF latitude/longitude grid without a CRS variable: WGS 84 degrees.
        return RasterArray(values[np.newaxis], transform, WGS84, FLOAT_NODATA)

    return load
