"""The 1999 monthly climate grids as data cubes: the packaged NetCDF file itself and the same
variables rewritten as a Zarr store, each one item described with the STAC datacube extension."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pystac
from affine import Affine
from shapely.geometry import box, mapping

from stacgis_raster.demo_data.model import CollectionSpec
from stacgis_raster.stac_fields import PROVENANCE_FIELD, TIME_RESOLVED_FIELD, iso

DATACUBE_EXT = "https://stac-extensions.github.io/datacube/v2.2.0/schema.json"
# The climate tiles' and cube's default map view: precipitation on the monthly collection's scale.
PRECIPITATION_RENDER: dict[str, Any] = {"expression": "pr", "rescale": [[0, 250]], "colormap_name": "blues"}


def _cube_dimensions(transform: Affine, width: int, height: int, times: list[dt.datetime]) -> dict[str, Any]:
    west, north = transform.c, transform.f
    east, south = west + width * transform.a, north + height * transform.e
    return {
        "x": {"type": "spatial", "axis": "x", "extent": [west, east], "step": transform.a, "reference_system": 4326},
        "y": {"type": "spatial", "axis": "y", "extent": [south, north], "step": transform.e, "reference_system": 4326},
        "time": {"type": "temporal", "extent": [iso(times[0]), iso(times[-1])], "values": [iso(t) for t in times]},
    }


def climate_cube(
    stac_dir: Path, precipitation: CollectionSpec, temperature: CollectionSpec
) -> tuple[pystac.Collection, list[Path]]:
    """The 1999 monthly grids as one data cube: the packaged NetCDF file itself, variables pr and tas
    over time x latitude x longitude, described with the STAC datacube extension."""
    source = precipitation.sources[0].path
    target = stac_dir / "bcsd-1999-cube" / "bcsd-1999-cube" / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        shutil.copyfile(source, target)
    collection = _cube_collection(
        "bcsd-1999-cube",
        precipitation,
        temperature,
        pystac.Asset(href=str(target), media_type="application/x-netcdf", roles=["data"], title="NetCDF: pr, tas"),
        format_name="NetCDF",
        lead=(
            "The packaged NetCDF file behind collections bcsd-precipitation-1999 and bcsd-temperature-1999, "
            "served as it is"
        ),
    )
    return collection, [target]


ZARR_MEDIA_TYPE = "application/vnd+zarr"


def climate_zarr(
    stac_dir: Path, precipitation: CollectionSpec, temperature: CollectionSpec
) -> tuple[pystac.Collection, list[Path]]:
    """The same data cube as a Zarr store: the packaged NetCDF file's pr and tas rewritten, values and
    grid unchanged, as Zarr version 2 (the layout xarray writes: `_ARRAY_DIMENSIONS` names each array's
    dimensions, and time, lat and lon are coordinate arrays), one zlib-compressed chunk per month."""
    source = precipitation.sources[0].path
    target = stac_dir / "bcsd-1999-zarr" / "bcsd-1999-zarr" / f"{source.stem}.zarr"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_netcdf_as_zarr(source, target, [spec.bands[0].name for spec in (precipitation, temperature)])
    collection = _cube_collection(
        "bcsd-1999-zarr",
        precipitation,
        temperature,
        pystac.Asset(href=str(target), media_type=ZARR_MEDIA_TYPE, roles=["data"], title="Zarr: pr, tas"),
        format_name="Zarr",
        lead=(
            "The data of collection bcsd-1999-cube as a Zarr store (version 2): pr and tas of the packaged "
            "NetCDF file behind collections bcsd-precipitation-1999 and bcsd-temperature-1999 rewritten at "
            "build time, values and grid unchanged, one compressed chunk per month"
        ),
    )
    return collection, [target]


def write_netcdf_as_zarr(source: Path, target: Path, variables: list[str]) -> None:
    """Variables (time, lat, lon) of a NetCDF file, as GDAL reads them (north up), into a new Zarr
    store; written beside the target and renamed, so a reader never sees half a store."""
    import rasterio
    import zarr
    from numcodecs import Zlib

    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    root = zarr.open_group(str(partial), mode="w", zarr_format=2)
    days: list[float] = []
    time_units = ""
    for name in variables:
        with rasterio.open(f"netcdf:{source}:{name}") as ds:
            data = ds.read()
            transform, nodata, units = ds.transform, ds.nodata, ds.tags(1).get("units")
            days = [float(ds.tags(band)["NETCDF_DIM_time"]) for band in ds.indexes]
            time_units = ds.tags()["time#units"]
        array = root.create_array(
            name,
            shape=data.shape,
            dtype=data.dtype,
            chunks=(1, *data.shape[1:]),
            compressors=Zlib(level=6),
            fill_value=nodata,
            attributes={"_ARRAY_DIMENSIONS": ["time", "lat", "lon"], **({"units": units} if units else {})},
        )
        array[:] = data
    height, width = data.shape[1:]
    coordinates = {
        "time": (np.array(days), {"units": time_units, "calendar": "standard", "standard_name": "time"}),
        # Cell centres, north first: GDAL derives the same north-up grid as from the NetCDF file.
        "lat": (
            transform.f + (np.arange(height) + 0.5) * transform.e,
            {"units": "degrees_north", "standard_name": "latitude"},
        ),
        "lon": (
            transform.c + (np.arange(width) + 0.5) * transform.a,
            {"units": "degrees_east", "standard_name": "longitude"},
        ),
    }
    for name, (values, attributes) in coordinates.items():
        array = root.create_array(
            name,
            shape=values.shape,
            dtype=values.dtype,
            chunks=values.shape,
            compressors=None,
            fill_value=None,
            attributes={"_ARRAY_DIMENSIONS": [name], **attributes},
        )
        array[:] = values
    zarr.consolidate_metadata(str(partial), zarr_format=2)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def _cube_collection(
    collection_id: str,
    precipitation: CollectionSpec,
    temperature: CollectionSpec,
    asset: pystac.Asset,
    *,
    format_name: str,
    lead: str,
) -> pystac.Collection:
    """A one-item data cube collection of the 1999 monthly pr and tas grids, whatever the file format:
    grid from the packaged NetCDF file, time steps from the monthly collection cut from it."""
    import rasterio

    with rasterio.open(f"netcdf:{precipitation.sources[0].path}:{precipitation.bands[0].name}") as ds:
        transform, width, height = ds.transform, ds.width, ds.height
    months = [item for item in precipitation.items if item.datetime is not None]
    times = [m.datetime for m in months if m.datetime is not None]
    dimensions = _cube_dimensions(transform, width, height, times)
    variables = {
        spec.bands[0].name: {
            "dimensions": ["time", "y", "x"],
            "type": "data",
            "description": spec.bands[0].description,
            "unit": spec.bands[0].unit,
        }
        for spec in (precipitation, temperature)
    }
    outline = box(transform.c, transform.f + height * transform.e, transform.c + width * transform.a, transform.f)
    start, end = months[0].start or times[0], months[-1].end or times[-1]
    item = pystac.Item(
        id=collection_id,
        geometry=mapping(outline),
        bbox=list(outline.bounds),
        datetime=None,
        start_datetime=start,
        end_datetime=end,
        properties={"cube:dimensions": dimensions, "cube:variables": variables},
        collection=collection_id,
        stac_extensions=[DATACUBE_EXT],
    )
    item.add_asset("data", asset)
    collection = pystac.Collection(
        id=collection_id,
        title=f"Monthly precipitation and temperature 1999 as one data cube ({format_name})",
        description=(
            f"{lead}: variables pr (mm/month) and tas (degC) over 12 months x {height} latitudes x {width} "
            "longitudes (1/8 degree over Tennessee, Kentucky, North Carolina, Virginia and neighbours). "
            "Described with the STAC datacube extension (cube:dimensions, cube:variables); each month is one "
            "step of the time dimension."
        ),
        extent=pystac.Extent(pystac.SpatialExtent([list(outline.bounds)]), pystac.TemporalExtent([[start, end]])),
        license=precipitation.license,
        keywords=[
            "precipitation",
            "temperature",
            "climate",
            "monthly",
            "data cube",
            format_name.lower(),
            "1999",
            "bcsd",
        ],
        providers=[pystac.Provider.from_dict(p) for p in precipitation.providers],
        extra_fields={
            TIME_RESOLVED_FIELD: True,
            "renders": {"default": {"title": "Precipitation", **PRECIPITATION_RENDER}},
            "cube:dimensions": dimensions,
            "cube:variables": variables,
            PROVENANCE_FIELD: {
                "sources": [s.provenance() for s in precipitation.sources],
                "derived_from": None if format_name == "NetCDF" else "bcsd-1999-cube",
                "notes": precipitation.notes,
                "built_by": "python -m stacgis_raster.demo_data",
            },
        },
        stac_extensions=[DATACUBE_EXT],
    )
    collection.add_item(item)
    return collection
