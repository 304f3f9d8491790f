"""Write the demo collections as a self-contained static STAC catalog."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
import pystac
import rasterio
from rio_stac import create_stac_item
from shapely.geometry import box, mapping

from stacgis_raster.demo_data.model import CollectionSpec, ItemSpec
from stacgis_raster.stac_fields import (
    CLASSIFICATION_EXT,
    EO_EXT,
    PROVENANCE_FIELD,
    RENDER_EXT,
    TIME_RESOLVED_FIELD,
    iso,
)

CATALOG_ID = "stacgis-demo"


def _display_range(cog: Path, band: int) -> tuple[float, float]:
    """2nd and 98th percentile of a band from a <=1024 px read, rounded for display."""
    with rasterio.open(cog) as ds:
        scale = max(1.0, max(ds.width, ds.height) / 1024)
        shape = (max(1, int(ds.height / scale)), max(1, int(ds.width / scale)))
        values = ds.read(band, out_shape=shape, masked=True).compressed()
    if values.size == 0:
        return (0.0, 1.0)
    low, high = np.percentile(values.astype("float64"), [2, 98])
    if low == high:
        high = low + 1
    return (float(math.floor(low)), float(math.ceil(high)))


def _item(spec: CollectionSpec, item_spec: ItemSpec) -> pystac.Item:
    properties: dict[str, Any] = {}
    if item_spec.start and item_spec.end:
        properties["start_datetime"], properties["end_datetime"] = iso(item_spec.start), iso(item_spec.end)
    with rasterio.open(item_spec.cog) as ds:
        projected = bool(ds.crs and not ds.crs.is_geographic)
        wkt2 = ds.crs.to_wkt(version="WKT2_2019") if ds.crs else None
        has_nodata = ds.nodata is not None
        resolution_m = approximate_resolution_m(ds)
    item: pystac.Item = create_stac_item(
        str(item_spec.cog),
        input_datetime=item_spec.datetime,
        id=item_spec.id,
        collection=spec.id,
        properties=properties,
        asset_name="data",
        asset_roles=["data"],
        asset_media_type=pystac.MediaType.COG,
        with_proj=True,
        with_raster=True,
        # Densify edges of projected grids so the WGS 84 footprint follows their curvature.
        geom_densify_pts=21 if projected else 0,
        geom_precision=6,
    )
    # rio-stac 0.12 writes the pre-2.0 `proj:epsg`; projection v2 uses `proj:code`.
    epsg = item.properties.pop("proj:epsg", None)
    item.properties["proj:code"] = f"EPSG:{epsg}" if epsg else None
    # Keep the file's own definition too: some source CRSs only match an EPSG code loosely.
    item.properties["proj:wkt2"] = wkt2
    item.stac_extensions = [url.replace("projection/v1.1.0", "projection/v2.0.0") for url in item.stac_extensions]
    _clamp_bbox(item)
    asset = item.assets["data"]
    asset.title = spec.title
    bands = asset.extra_fields.get("raster:bands", [])
    for band, band_spec in zip(bands, spec.bands, strict=True):
        band["spatial_resolution"] = resolution_m
        if not has_nodata and "statistics" in band:
            # rio-stac miscounts valid pixels when a band has no nodata value: all are valid.
            band["statistics"]["valid_percent"] = 100.0
        band["name"] = band_spec.name
        band["description"] = band_spec.description
        if band_spec.unit:
            band["unit"] = band_spec.unit
        if spec.classes is not None:
            band["classification:classes"] = [
                {
                    "value": c.value,
                    "name": c.slug,
                    "title": c.title,
                    "color_hint": "{:02X}{:02X}{:02X}".format(*c.color[:3]),
                }
                for c in spec.classes
            ]
    if spec.classes is not None:
        item.stac_extensions.append(CLASSIFICATION_EXT)
    if any(b.common_name for b in spec.bands):
        asset.extra_fields["eo:bands"] = [
            {"name": b.name, "common_name": b.common_name, "description": b.description} for b in spec.bands
        ]
        item.stac_extensions.append(EO_EXT)
    return item


def _clamp_bbox(item: pystac.Item) -> None:
    # A grid reaching half a cell past the antimeridian still gets a valid STAC footprint.
    if item.bbox is None:
        return
    w, s, e, n = item.bbox
    clamped = [max(w, -180.0), max(s, -90.0), min(e, 180.0), min(n, 90.0)]
    if clamped != item.bbox:
        item.bbox = clamped
        item.geometry = mapping(box(*clamped))


def approximate_resolution_m(ds: rasterio.io.DatasetReader) -> float:
    """Mean pixel size in metres (geographic grids measured at their central latitude)."""
    xres, yres = ds.res
    if ds.crs is None or not ds.crs.is_geographic:
        return float(round((xres + yres) / 2, 3))
    lat = math.radians((ds.bounds.top + ds.bounds.bottom) / 2)
    metres_per_degree = 111_320.0
    return float(round((xres * metres_per_degree * math.cos(lat) + yres * metres_per_degree) / 2, 1))


def _render(spec: CollectionSpec, first_cog: Path) -> dict[str, Any]:
    render: dict[str, Any] = {"title": spec.title, "assets": ["data"], "resampling": "nearest"}
    if spec.classes is not None:
        render["colormap"] = {str(c.value): list(c.color) for c in spec.classes}
        render["bidx"] = [1]
        return render
    bands = spec.render_bands or [1]
    render["bidx"] = bands
    if spec.rescale is not None:
        render["rescale"] = [list(spec.rescale[b - 1]) for b in bands]
    else:
        render["rescale"] = [list(_display_range(first_cog, b)) for b in bands]
    if spec.colormap_name and len(bands) == 1:
        render["colormap_name"] = spec.colormap_name
    render["resampling"] = "bilinear"
    return render


def build_collection(spec: CollectionSpec) -> pystac.Collection:
    items = [_item(spec, item_spec) for item_spec in spec.items]
    boxes = np.array([item.bbox for item in items if item.bbox is not None])
    bbox = [float(boxes[:, 0].min()), float(boxes[:, 1].min()), float(boxes[:, 2].max()), float(boxes[:, 3].max())]
    starts = [_start(item) for item in items]
    ends = [_end(item) for item in items]
    temporal = pystac.TemporalExtent([[min(starts), max(ends)]])
    extent = pystac.Extent(pystac.SpatialExtent([bbox]), temporal)
    extra: dict[str, Any] = {
        TIME_RESOLVED_FIELD: spec.time_resolved,
        PROVENANCE_FIELD: {
            "sources": [s.provenance() for s in spec.sources],
            "derived_from": spec.derived_from,
            "notes": spec.notes,
            "built_by": "python -m stacgis_raster.demo_data",
        },
        "renders": {"default": _render(spec, spec.items[0].cog)},
    }
    collection = pystac.Collection(
        id=spec.id,
        title=spec.title,
        description=spec.description,
        extent=extent,
        license=spec.license,
        keywords=spec.keywords,
        providers=[pystac.Provider.from_dict(p) for p in spec.providers],
        extra_fields=extra,
        stac_extensions=[RENDER_EXT],
    )
    first = items[0].assets["data"].extra_fields.get("raster:bands", [])
    collection.summaries.add(
        "raster:bands", [{k: v for k, v in band.items() if k not in {"statistics", "histogram"}} for band in first]
    )
    collection.summaries.add("proj:code", sorted({str(i.properties.get("proj:code")) for i in items}))
    for src in spec.sources:
        collection.add_link(
            pystac.Link(
                "via",
                src.package.homepage,
                media_type="text/html",
                title=f"{src.package.name} {src.package.version}: {src.member}",
            )
        )
    collection.add_items(items)
    return collection


def _start(item: pystac.Item) -> dt.datetime:
    value = item.common_metadata.start_datetime or item.datetime
    assert value is not None
    return value


def _end(item: pystac.Item) -> dt.datetime:
    value = item.common_metadata.end_datetime or item.datetime
    assert value is not None
    return value


def write_catalog(specs: list[CollectionSpec], stac_dir: Path, extra: list[pystac.Collection] | None = None) -> Path:
    catalog = pystac.Catalog(
        id=CATALOG_ID,
        title="stacgis demo rasters",
        description=(
            "Real rasters shipped inside Debian, PyPI and npm packages, converted to "
            "Cloud-Optimized GeoTIFFs: elevation models, a Landsat 7 scene and its NDVI, land "
            "cover, monthly climate grids of 1999, global sea surface temperature, global "
            "precipitation and a global land mask."
        ),
    )
    for spec in specs:
        catalog.add_child(build_collection(spec))
    for collection in extra or []:
        catalog.add_child(collection)
    catalog.normalize_hrefs(str(stac_dir))
    catalog.make_all_asset_hrefs_relative()
    catalog.save(catalog_type=pystac.CatalogType.SELF_CONTAINED)
    return stac_dir / "catalog.json"
