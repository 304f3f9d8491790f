"""Multi-scene and data-cube demo collections: real rasters cut into a grid of items with one asset per band.

Real STAC APIs (Earth Search, Planetary Computer) hold many overlapping scenes per area and date,
each with one Cloud-Optimized GeoTIFF per band. These collections have the same shape, so item
search, paging, mosaics and band math meet real work: the pixels are the packaged rasters, cut
into tiles that overlap by a few pixels like neighbouring scenes do. What is derived (the tiling,
and `eo:cloud_cover` of the Landsat tiles) is said in each collection's description.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pystac
import shapely
from affine import Affine
from pyproj import Transformer
from shapely.geometry import box, mapping

from stacgis_raster.demo_data.cog import is_complete_cog, write_cog
from stacgis_raster.demo_data.model import BandSpec, CollectionSpec, RasterArray
from stacgis_raster.stac_fields import EO_EXT, PROVENANCE_FIELD, TIME_RESOLVED_FIELD

PROJ_EXT = "https://stac-extensions.github.io/projection/v2.0.0/schema.json"
RASTER_EXT = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
DATACUBE_EXT = "https://stac-extensions.github.io/datacube/v2.2.0/schema.json"
# The climate tiles' and cube's default map view: precipitation on the monthly collection's scale.
PRECIPITATION_RENDER: dict[str, Any] = {"expression": "pr", "rescale": [[0, 250]], "colormap_name": "blues"}
# Band 1 digital numbers at or above this are bright, cloud-like pixels (about 1 % of the scene).
BRIGHT_BLUE_DN = 120


@dataclass(frozen=True)
class Tile:
    row: int
    col: int
    rows: slice
    cols: slice


def grid_tiles(height: int, width: int, nrows: int, ncols: int, overlap: int) -> list[Tile]:
    """`nrows` x `ncols` tiles covering the array, each reaching `overlap` pixels into its neighbours."""
    tiles = []
    for r in range(nrows):
        for c in range(ncols):
            r0, r1 = max(0, r * height // nrows - overlap), min(height, (r + 1) * height // nrows + overlap)
            c0, c1 = max(0, c * width // ncols - overlap), min(width, (c + 1) * width // ncols + overlap)
            tiles.append(Tile(r, c, slice(r0, r1), slice(c0, c1)))
    return tiles


def _footprint(transform: Affine, height: int, width: int, crs: Any) -> shapely.Geometry:
    outline = box(*(transform * (0, height)), *(transform * (width, 0)))
    if str(crs) in {"EPSG:4326", "OGC:CRS84"}:
        return outline
    to_wgs84 = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    dense = shapely.segmentize(outline, max(outline.bounds[2] - outline.bounds[0], 1) / 20)
    return shapely.transform(dense, lambda xy: np.column_stack(to_wgs84.transform(xy[:, 0], xy[:, 1])))


def _iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _band_fields(band: BandSpec, data: np.ndarray, nodata: float | None, resolution_m: float) -> dict[str, Any]:
    raster: dict[str, Any] = {"data_type": data.dtype.name, "spatial_resolution": resolution_m}
    if nodata is not None:
        raster["nodata"] = nodata
    if band.unit:
        raster["unit"] = band.unit
    eo: dict[str, Any] = {"name": band.name, "description": band.description}
    if band.common_name:
        eo["common_name"] = band.common_name
    return {"eo:bands": [eo], "raster:bands": [raster]}


def _asset_key(band: BandSpec) -> str:
    return band.common_name or band.name


class SceneWriter:
    """Writes one tiled collection: a COG per band per item, and the pystac objects describing them."""

    def __init__(self, stac_dir: Path, spec: CollectionSpec, resolution_m: float) -> None:
        self.stac_dir = stac_dir
        self.spec = spec
        self.resolution_m = resolution_m
        self.items: list[pystac.Item] = []
        self.cogs: list[Path] = []

    def add(
        self,
        item_id: str,
        raster: RasterArray,
        when: dt.datetime,
        *,
        start: dt.datetime | None = None,
        end: dt.datetime | None = None,
        properties: dict[str, Any] | None = None,
        cloud_mask: np.ndarray | None = None,
    ) -> None:
        _, height, width = raster.data.shape
        footprint = _footprint(raster.transform, height, width, raster.crs)
        props: dict[str, Any] = {
            **(properties or {}),
            "proj:code": str(raster.crs),
            "proj:shape": [height, width],
            "proj:transform": list(raster.transform)[:6],
        }
        if start is not None and end is not None:
            props["start_datetime"], props["end_datetime"] = _iso(start), _iso(end)
        item = pystac.Item(
            id=item_id,
            geometry=mapping(shapely.set_precision(footprint, 1e-6)),
            bbox=[round(v, 6) for v in footprint.bounds],
            datetime=when,
            properties=props,
            collection=self.spec.id,
            stac_extensions=[PROJ_EXT, RASTER_EXT, EO_EXT],
        )
        for index, band in enumerate(self.spec.bands):
            key = _asset_key(band)
            cog = self.stac_dir / self.spec.id / item_id / f"{item_id}-{key}.tif"
            self.cogs.append(cog)
            if not is_complete_cog(cog):
                write_cog(
                    raster.data[index : index + 1],
                    cog,
                    transform=raster.transform,
                    crs=raster.crs,
                    nodata=raster.nodata,
                    band_descriptions=[band.name],
                    overview_resampling=self.spec.overview_resampling,
                    blocksize=256,
                )
            item.add_asset(
                key,
                pystac.Asset(
                    href=str(cog),
                    media_type=pystac.MediaType.COG,
                    roles=["data"],
                    title=band.description,
                    extra_fields=_band_fields(band, raster.data, raster.nodata, self.resolution_m),
                ),
            )
        if cloud_mask is not None:
            self._add_cloud_mask(item, raster, cloud_mask)
        self.items.append(item)

    def _add_cloud_mask(self, item: pystac.Item, raster: RasterArray, mask: np.ndarray) -> None:
        """A cloud mask asset (STAC role `cloud`) with classes, as imagery catalogs ship them."""
        cog = self.stac_dir / self.spec.id / item.id / f"{item.id}-cloud_mask.tif"
        self.cogs.append(cog)
        if not is_complete_cog(cog):
            write_cog(
                mask.astype("uint8")[np.newaxis],
                cog,
                transform=raster.transform,
                crs=raster.crs,
                nodata=None,
                band_descriptions=["cloud_mask"],
                overview_resampling="nearest",
                blocksize=256,
            )
        item.add_asset(
            "cloud_mask",
            pystac.Asset(
                href=str(cog),
                media_type=pystac.MediaType.COG,
                roles=["cloud"],
                title=f"Bright, cloud-like pixels (band 1 DN >= {BRIGHT_BLUE_DN}; derived)",
                extra_fields={
                    "raster:bands": [{"data_type": "uint8", "spatial_resolution": self.resolution_m}],
                    "classification:classes": [
                        {"value": 0, "name": "clear", "description": "clear"},
                        {"value": 1, "name": "cloud", "description": "bright, cloud-like"},
                    ],
                },
            ),
        )

    def collection(self, render: dict[str, Any], *, summaries: dict[str, Any] | None = None) -> pystac.Collection:
        spec = self.spec
        boxes = np.array([i.bbox for i in self.items])
        bbox = [float(boxes[:, 0].min()), float(boxes[:, 1].min()), float(boxes[:, 2].max()), float(boxes[:, 3].max())]
        starts = [i.common_metadata.start_datetime or i.datetime for i in self.items]
        ends = [i.common_metadata.end_datetime or i.datetime for i in self.items]
        first = self.items[0]
        collection = pystac.Collection(
            id=spec.id,
            title=spec.title,
            description=spec.description,
            extent=pystac.Extent(
                pystac.SpatialExtent([bbox]),
                pystac.TemporalExtent([[min(s for s in starts if s), max(e for e in ends if e)]]),
            ),
            license=spec.license,
            keywords=spec.keywords,
            providers=[pystac.Provider.from_dict(p) for p in spec.providers],
            extra_fields={
                TIME_RESOLVED_FIELD: spec.time_resolved,
                # The render extension's default view: tiles and TileJSON use it without parameters.
                "renders": {"default": {"title": spec.title, **render}},
                PROVENANCE_FIELD: {
                    "sources": [s.provenance() for s in spec.sources],
                    "derived_from": spec.derived_from,
                    "notes": spec.notes,
                    "built_by": "python -m stacgis_raster.demo_data",
                },
                # What every item holds, so a client knows the bands before reading any item.
                "item_assets": {
                    key: {
                        "title": asset.title,
                        "type": asset.media_type,
                        "roles": asset.roles,
                        **{
                            k: v
                            for k, v in asset.extra_fields.items()
                            if k in {"eo:bands", "raster:bands", "classification:classes"}
                        },
                    }
                    for key, asset in first.assets.items()
                },
            },
            stac_extensions=[EO_EXT, RASTER_EXT, "https://stac-extensions.github.io/item-assets/v1.0.0/schema.json"],
        )
        for key, value in (summaries or {}).items():
            collection.summaries.add(key, value)
        collection.summaries.add("proj:code", sorted({str(i.properties["proj:code"]) for i in self.items}))
        collection.add_items(self.items)
        return collection


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


def _cube_dimensions(transform: Affine, width: int, height: int, times: list[dt.datetime]) -> dict[str, Any]:
    west, north = transform.c, transform.f
    east, south = west + width * transform.a, north + height * transform.e
    return {
        "x": {"type": "spatial", "axis": "x", "extent": [west, east], "step": transform.a, "reference_system": 4326},
        "y": {"type": "spatial", "axis": "y", "extent": [south, north], "step": transform.e, "reference_system": 4326},
        "time": {"type": "temporal", "extent": [_iso(times[0]), _iso(times[-1])], "values": [_iso(t) for t in times]},
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
