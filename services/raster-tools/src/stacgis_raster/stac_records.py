"""STAC objects (pystac) read into the catalog's records: bands from `raster:bands` and `eo:bands`,
scene assets from `item_assets`, data cubes from the datacube extension, cloud masks from classes."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pystac

from stacgis_raster.records import BandInfo, CollectionRecord, ItemRecord, cube_format
from stacgis_raster.stac_fields import PROVENANCE_FIELD, TIME_RESOLVED_FIELD

_DATA_MEDIA_TYPES = ("image/tiff", "image/vnd.stac.geotiff")


def _bands_from(raster_bands: list[dict[str, Any]], eo_bands: list[dict[str, Any]] | None = None) -> list[BandInfo]:
    bands = []
    for index, band in enumerate(raster_bands, start=1):
        eo = (eo_bands or [])[index - 1] if eo_bands and len(eo_bands) >= index else {}
        classes = None
        if band.get("classification:classes"):
            classes = {
                int(c["value"]): str(c.get("title") or c.get("description") or c.get("name"))
                for c in band["classification:classes"]
            }
        nodata = band.get("nodata")
        bands.append(
            BandInfo(
                index=index,
                name=str(band.get("name") or eo.get("name") or f"band{index}"),
                description=band.get("description") or eo.get("description"),
                unit=band.get("unit"),
                nodata=float(nodata) if isinstance(nodata, (int, float)) else None,
                data_type=band.get("data_type"),
                classes=classes,
                common_name=eo.get("common_name"),
                scale=_number(band.get("scale")),
                offset=_number(band.get("offset")),
            )
        )
    return bands


CLOUD_WORDS = ("cloud", "shadow", "cirrus")


def _cloud_mask(item_assets: dict[str, Any]) -> tuple[str, tuple[int, ...]] | None:
    """The asset whose classes say cloud (STAC role `cloud`, or classes such as Sentinel-2's SCL
    `cloud_high_probability`), and those class values; None when items carry no such mask."""
    for key, asset in item_assets.items():
        classes = asset.get("classification:classes") or []
        cloudy = tuple(
            int(c["value"])
            for c in classes
            if "value" in c and any(w in f"{c.get('name', '')} {c.get('description', '')}".lower() for w in CLOUD_WORDS)
        )
        roles = set(asset.get("roles") or [])
        if cloudy and (roles & {"cloud", "cloud-shadow", "data"}):
            return key, cloudy
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _asset_bands(item_assets: dict[str, Any]) -> dict[str, BandInfo]:
    """Single-band data assets of a scene collection's `item_assets`, keyed by asset name."""
    out: dict[str, BandInfo] = {}
    for key, asset in item_assets.items():
        index = len(out) + 1
        raster = asset.get("raster:bands") or [{}]
        if "data" not in (asset.get("roles") or []) or len(raster) != 1:
            continue
        band = _bands_from(raster, asset.get("eo:bands"))[0]
        out[key] = replace(band, index=index, name=key, description=band.description or asset.get("title"))
    return out if len(out) > 1 else {}


def _data_asset(item: pystac.Item) -> pystac.Asset | None:
    if "data" in item.assets:
        return item.assets["data"]
    for asset in item.assets.values():
        media_type = asset.media_type or ""
        if "data" in (asset.roles or []) or media_type.startswith(_DATA_MEDIA_TYPES) or cube_format(media_type):
            return asset
    return None


def _href(asset: pystac.Asset) -> str:
    """An asset's location. An absolute path or URL stays as it is: pystac would join a path such as
    /data/x.tif to the host of an item served over HTTP."""
    if asset.href.startswith("/") or urlsplit(asset.href).scheme:
        return asset.href
    return asset.get_absolute_href() or asset.href


def _cube_steps(item: pystac.Item, collection_id: str) -> list[ItemRecord] | None:
    """A data cube item (datacube extension, a NetCDF or Zarr asset) as one record per time step:
    step i of cube:dimensions' time values is band i of each variable (GDAL's bands follow the
    time dimension's order, which the catalog's values list)."""
    variables = item.properties.get("cube:variables") or {}
    times = ((item.properties.get("cube:dimensions") or {}).get("time") or {}).get("values") or []
    asset = _data_asset(item)
    fmt = cube_format(asset.media_type) if asset is not None else None
    if not variables or not times or asset is None or fmt is None:
        return None
    href = _href(asset)
    bbox = tuple(item.bbox) if item.bbox else None
    steps = []
    for band, value in enumerate(times, start=1):
        when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        steps.append(
            ItemRecord(
                f"{item.id}@{value}",
                collection_id,
                bbox,  # type: ignore[arg-type]
                when,
                when,
                href,
                {name: href for name, variable in variables.items() if variable.get("type", "data") == "data"},
                None,
                fmt,
                band,
            )
        )
    return steps


def item_records(item: pystac.Item, collection_id: str) -> list[ItemRecord]:
    """An item's records: one, or one per time step of a data cube."""
    steps = _cube_steps(item, collection_id)
    if steps is not None:
        return steps
    record = item_record(item, collection_id)
    return [record] if record is not None else []


def item_record(item: pystac.Item, collection_id: str) -> ItemRecord | None:
    asset = _data_asset(item)
    if asset is None:
        return None
    start = item.common_metadata.start_datetime or item.datetime
    end = item.common_metadata.end_datetime or item.datetime
    bbox = tuple(item.bbox) if item.bbox else None
    assets = {
        key: _href(a)
        for key, a in item.assets.items()
        if "data" in (a.roles or []) and len(a.extra_fields.get("raster:bands") or [{}]) == 1
    }
    cloud = item.properties.get("eo:cloud_cover")
    mask = next((a for a in item.assets.values() if {"cloud", "cloud-shadow"} & set(a.roles or [])), None)
    return ItemRecord(
        item.id,
        collection_id,
        bbox,  # type: ignore[arg-type]
        start,
        end,
        _href(asset),
        assets if len(assets) > 1 else {},
        float(cloud) if isinstance(cloud, (int, float)) else None,
        mask_href=_href(mask) if mask is not None else None,
    )


def collection_record(
    collection: pystac.Collection, items: list[ItemRecord] | None, sample_item: pystac.Item | None
) -> CollectionRecord:
    spatial = collection.extent.spatial.bboxes[0] if collection.extent.spatial.bboxes else None
    interval = collection.extent.temporal.intervals[0] if collection.extent.temporal.intervals else [None, None]
    raster_bands: list[dict[str, Any]] = []
    summary = collection.summaries.get_list("raster:bands") if collection.summaries else None
    if sample_item is not None and (asset := _data_asset(sample_item)) is not None:
        raster_bands = asset.extra_fields.get("raster:bands") or []
    if not raster_bands and summary:
        raster_bands = summary
    cube_variables = collection.extra_fields.get("cube:variables") or {}
    asset_bands = _asset_bands(collection.extra_fields.get("item_assets") or {}) or {
        name: BandInfo(index, name, variable.get("description"), variable.get("unit"), None, None)
        for index, (name, variable) in enumerate(cube_variables.items(), start=1)
        if variable.get("type", "data") == "data"
    }
    if asset_bands:
        raster_bands = []
    time_resolved = collection.extra_fields.get(TIME_RESOLVED_FIELD)
    if time_resolved is None:
        time_resolved = interval[0] is not None and interval[0] != interval[1]
    renders = collection.extra_fields.get("renders") or {}
    render = renders.get("default") or (next(iter(renders.values())) if renders else {})
    proj_code = None
    resolution = None
    if sample_item is not None:
        proj_code = sample_item.properties.get("proj:code")
        if proj_code is None and sample_item.properties.get("proj:epsg"):
            proj_code = f"EPSG:{sample_item.properties['proj:epsg']}"
    if raster_bands:
        resolution = raster_bands[0].get("spatial_resolution")
    elif item_assets := collection.extra_fields.get("item_assets"):
        first_asset: dict[str, Any] = next(iter(item_assets.values()), {})
        resolution = (first_asset.get("raster:bands") or [{}])[0].get("spatial_resolution")
    return CollectionRecord(
        id=collection.id,
        title=collection.title or collection.id,
        description=collection.description or "",
        keywords=list(collection.keywords or []),
        license=collection.license,
        providers=[p.name for p in collection.providers or []],
        bbox=tuple(spatial) if spatial and len(spatial) == 4 else None,  # type: ignore[arg-type]
        start=interval[0],
        end=interval[1],
        time_resolved=bool(time_resolved),
        bands=list(asset_bands.values()) if asset_bands else _bands_from(raster_bands),
        render=render,
        proj_code=proj_code,
        resolution_m=resolution,
        item_count=len(items) if items is not None else None,
        provenance=collection.extra_fields.get(PROVENANCE_FIELD),
        items=sorted(items or [], key=lambda i: i.start or dt.datetime.min.replace(tzinfo=dt.UTC)),
        asset_bands=asset_bands,
        cloud_mask=_cloud_mask(collection.extra_fields.get("item_assets") or {}),
        cube_dimensions=collection.extra_fields.get("cube:dimensions") if cube_variables else None,
    )
