"""Raster collections from a STAC source: a static catalog (path or URL) or a STAC API, and the
keyword search over them.

The sources' work is blocking I/O; the service calls it from worker threads.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import pystac
from pystac.stac_io import DefaultStacIO

from stacgis_raster.assets import AssetGuard
from stacgis_raster.errors import UpstreamError, unknown_collection
from stacgis_raster.stac_fields import TIME_RESOLVED_FIELD
from stacgis_raster.validation import BBox, TimeInterval, boxes_overlap

_DATA_MEDIA_TYPES = ("image/tiff", "image/vnd.stac.geotiff")


@dataclass(frozen=True)
class CubeFormat:
    """How GDAL opens a multidimensional file: the time steps of a (time, y, x) variable are the
    bands of the variable's dataset, in the order of the time dimension."""

    name: str
    variable: str  # the open string of one variable: {href} the file, {variable} the variable
    container: str  # the open string of the whole file, whose subdatasets are its variables
    # Prefix for http(s) hrefs where the driver does not add GDAL's /vsicurl/ itself.
    remote_prefix: str = ""

    def _href(self, href: str) -> str:
        return self.remote_prefix + href if self.remote_prefix and href.startswith(("http://", "https://")) else href

    def source(self, href: str, variable: str) -> str:
        return self.variable.format(href=self._href(href), variable=variable)

    def root(self, href: str) -> str:
        return self.container.format(href=self._href(href))


_NETCDF = CubeFormat("NetCDF", "netcdf:{href}:{variable}", "netcdf:{href}")
# A Zarr store is a directory (or a URL prefix): the path is quoted, the array is a path inside it.
_ZARR = CubeFormat("Zarr", 'ZARR:"{href}":/{variable}', 'ZARR:"{href}"', remote_prefix="/vsicurl/")
# Media types of data cube assets and how each is opened: the one table of them.
CUBE_FORMATS: dict[str, CubeFormat] = {
    "application/x-netcdf": _NETCDF,
    "application/netcdf": _NETCDF,
    "application/vnd+zarr": _ZARR,
    "application/vnd.zarr": _ZARR,
    "application/x-zarr": _ZARR,
}


def cube_format(media_type: str | None) -> CubeFormat | None:
    """The format of a cube asset's media type; parameters such as `; version=2` do not matter."""
    return CUBE_FORMATS.get((media_type or "").split(";")[0].strip().lower())


@dataclass(frozen=True)
class BandInfo:
    index: int
    name: str
    description: str | None
    unit: str | None
    nodata: float | None
    data_type: str | None
    classes: dict[int, str] | None = None
    common_name: str | None = None
    # raster:bands scale and offset: physical value = stored value * scale + offset.
    scale: float | None = None
    offset: float | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"band": self.index, "name": self.name}
        if self.common_name:
            out["common_name"] = self.common_name
        if self.description:
            out["description"] = self.description
        out["unit"] = self.unit
        if self.classes:
            out["classes"] = {str(k): v for k, v in self.classes.items()}
        return out


@dataclass(frozen=True)
class ItemRecord:
    id: str
    collection_id: str
    bbox: BBox | None
    start: dt.datetime | None
    end: dt.datetime | None
    href: str
    # Scene items: one single-band asset per band (key -> href), and their cloud cover when stated.
    assets: dict[str, str] = field(default_factory=dict)
    cloud_cover: float | None = None
    # Data cubes: the assets are variables of one multidimensional file in this format, and this
    # record is the time step in band `band` of each.
    cube: CubeFormat | None = None
    band: int = 1
    # The item's own cloud mask (the collection's `cloud_mask` asset), when it has one.
    mask_href: str | None = None

    @property
    def when(self) -> dt.datetime | None:
        return self.start

    def time_label(self) -> str | None:
        if self.start is None:
            return None
        if self.end is None or self.end == self.start:
            return _iso(self.start)
        return f"{_iso(self.start)}/{_iso(self.end)}"


@dataclass
class CollectionRecord:
    id: str
    title: str
    description: str
    keywords: list[str]
    license: str
    providers: list[str]
    bbox: BBox | None
    start: dt.datetime | None
    end: dt.datetime | None
    time_resolved: bool
    bands: list[BandInfo]
    render: dict[str, Any]
    proj_code: str | None
    resolution_m: float | None
    item_count: int | None
    provenance: dict[str, Any] | None = None
    items: list[ItemRecord] = field(default_factory=list)
    # Scene collections (STAC `item_assets` with one band per asset): asset key -> its band.
    asset_bands: dict[str, BandInfo] = field(default_factory=dict)
    # Data cubes: the STAC datacube extension's dimensions (x, y, time), for get_raster_info.
    cube_dimensions: dict[str, Any] | None = None
    # Scenes: the asset holding each item's cloud mask and its class values that mean cloud or shadow.
    cloud_mask: tuple[str, tuple[int, ...]] | None = None

    @property
    def categorical(self) -> bool:
        return bool(self.bands and self.bands[0].classes)

    @property
    def scenes(self) -> bool:
        """Many items per area, each with one asset per band: read by the scene tools."""
        return bool(self.asset_bands)

    def temporal_label(self) -> str | None:
        if self.start is None and self.end is None:
            return None
        return f"{_iso(self.start) if self.start else '..'}/{_iso(self.end) if self.end else '..'}"

    def summary(self) -> dict[str, Any]:
        """Compact description for listings."""
        units = sorted({b.unit for b in self.bands if b.unit})
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "bbox": [round(v, 4) for v in self.bbox] if self.bbox else None,
            "time": self.temporal_label() if self.time_resolved else "not time-resolved",
            "bands": len(self.bands),
            "units": units,
            "kind": "categorical" if self.categorical else "continuous",
        }
        if self.item_count is not None:
            out["items"] = self.item_count
        if self.scenes:
            out["kind"] = "data cube" if self.cube_dimensions else "scenes"
            out["variables" if self.cube_dimensions else "assets"] = list(self.asset_bands)
        return out

    def details(self) -> dict[str, Any]:
        out = self.summary()
        out.pop("units")
        out["description"] = self.description
        out["keywords"] = self.keywords
        out["license"] = self.license
        out["providers"] = self.providers
        out["crs"] = self.proj_code
        out["resolution_m"] = self.resolution_m
        out["bands"] = [b.describe() for b in self.bands]
        if self.cube_dimensions:
            out["kind"] = "data cube"
            out["variables"] = {key: band.describe() for key, band in self.asset_bands.items()}
            out["dimensions"] = {
                name: {k: v for k, v in dim.items() if k in {"type", "extent", "step"}}
                | ({"steps": len(dim["values"])} if "values" in dim else {})
                for name, dim in self.cube_dimensions.items()
            }
        elif self.scenes:
            out["assets"] = {key: band.describe() for key, band in self.asset_bands.items()}
            out["scene_tools"] = (
                "search_items, get_scene_statistics (band math, mosaics, composites), get_scene_timeseries"
            )
        out["time_resolved"] = self.time_resolved
        if self.time_resolved and self.items and not self.scenes:
            out["timesteps"] = [i.time_label() for i in self.items[:24]]
            if len(self.items) > 24:
                out["timesteps"].append(f"... {len(self.items) - 24} more")
        if self.provenance:
            out["provenance"] = self.provenance
        return out


def _iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


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
        provenance=collection.extra_fields.get("stacgis:provenance"),
        items=sorted(items or [], key=lambda i: i.start or dt.datetime.min.replace(tzinfo=dt.UTC)),
        asset_bands=asset_bands,
        cloud_mask=_cloud_mask(collection.extra_fields.get("item_assets") or {}),
        cube_dimensions=collection.extra_fields.get("cube:dimensions") if cube_variables else None,
    )


class GuardedStacIO(DefaultStacIO):
    """pystac I/O that only reads allowed locations and never waits forever."""

    def __init__(self, guard: AssetGuard, timeout: float) -> None:
        super().__init__()
        self.guard = guard
        self.timeout = timeout

    def read_text_from_href(self, href: str) -> str:
        target = self.guard.check(href)
        if target.startswith(("http://", "https://")):
            try:
                response = httpx.get(target, timeout=self.timeout, follow_redirects=False)
                response.raise_for_status()
            except httpx.HTTPError as exc:
                raise UpstreamError(f"could not read STAC document {href}: {exc}") from exc
            return response.text
        return Path(target).read_text(encoding="utf-8")


class CatalogSource(Protocol):
    def load(self) -> None: ...

    def collections(self) -> list[CollectionRecord]: ...

    def collection(self, collection_id: str, argument: str = "collection_id") -> CollectionRecord: ...

    def items(
        self, collection: CollectionRecord, interval: TimeInterval | None, bbox: BBox | None, limit: int
    ) -> list[ItemRecord]: ...


def _overlaps(item: ItemRecord, bbox: BBox | None) -> bool:
    return boxes_overlap(bbox, item.bbox)


class _CachedSource:
    """Shared TTL bookkeeping: reload the whole listing when it is older than the TTL."""

    def __init__(self, refresh_seconds: float) -> None:
        self.refresh_seconds = refresh_seconds
        self._records: dict[str, CollectionRecord] = {}
        self._loaded_at = 0.0
        self._lock = threading.Lock()

    def _fetch(self) -> dict[str, CollectionRecord]:
        raise NotImplementedError

    def load(self) -> None:
        try:
            records = self._fetch()
        except UpstreamError:
            raise
        except FileNotFoundError as exc:
            raise UpstreamError(
                f"no STAC catalog at {exc.filename}: build the demo data (make data) or set RASTER_STAC_URL"
            ) from exc
        except Exception as exc:
            raise UpstreamError(f"could not load the STAC catalog: {type(exc).__name__}: {exc}") from exc
        with self._lock:
            self._records = records
            self._loaded_at = time.monotonic()

    def _ensure_fresh(self) -> None:
        if not self._loaded_at or time.monotonic() - self._loaded_at > self.refresh_seconds:
            self.load()

    def collections(self) -> list[CollectionRecord]:
        self._ensure_fresh()
        return list(self._records.values())

    def collection(self, collection_id: str, argument: str = "collection_id") -> CollectionRecord:
        self._ensure_fresh()
        record = self._records.get(collection_id)
        if record is None:
            raise unknown_collection(collection_id, self._records, argument)
        return record


class StaticCatalogSource(_CachedSource):
    """A static catalog read completely into memory (fine for up to thousands of items)."""

    def __init__(self, href: str, guard: AssetGuard, *, refresh_seconds: float, timeout: float) -> None:
        super().__init__(refresh_seconds)
        self.href = href
        self.io = GuardedStacIO(guard, timeout)

    def _fetch(self) -> dict[str, CollectionRecord]:
        root = pystac.read_file(self.href, stac_io=self.io)
        if not isinstance(root, pystac.Catalog):
            raise UpstreamError(f"{self.href} is not a STAC catalog or collection")
        collections: Iterable[pystac.Collection] = (
            [root] if isinstance(root, pystac.Collection) else root.get_all_collections()
        )
        records = {}
        for collection in collections:
            pystac_items = list(collection.get_items())
            items = [r for i in pystac_items for r in item_records(i, collection.id)]
            records[collection.id] = collection_record(collection, items, pystac_items[0] if pystac_items else None)
        return records

    def items(
        self, collection: CollectionRecord, interval: TimeInterval | None, bbox: BBox | None, limit: int
    ) -> list[ItemRecord]:
        selected = [
            i
            for i in collection.items
            if _overlaps(i, bbox)
            and (interval is None or not collection.time_resolved or interval.overlaps(i.start, i.end))
        ]
        return selected[:limit]


class StacApiSource(_CachedSource):
    """A STAC API searched with pystac-client; item lists are not cached."""

    def __init__(self, url: str, *, refresh_seconds: float, timeout: float, listing_items: int = 100) -> None:
        super().__init__(refresh_seconds)
        self.url = url
        self.timeout = timeout
        self.listing_items = listing_items
        self._client: Any = None

    def _open(self) -> Any:
        if self._client is None:
            from pystac_client import Client
            from pystac_client.stac_api_io import StacApiIO

            self._client = Client.open(self.url, stac_io=StacApiIO(timeout=self.timeout))
        return self._client

    def _fetch(self) -> dict[str, CollectionRecord]:
        client = self._open()
        records = {}
        try:
            for collection in client.get_collections():
                # The first items describe the collection as a static catalog's do (bands from a sample,
                # time steps, a count when they are all); searches still run per request.
                wanted = max(1, self.listing_items) + 1
                search = client.search(collections=[collection.id], max_items=wanted, limit=min(wanted, 100))
                found = list(search.items())
                items = [r for i in found for r in item_records(i, collection.id)]
                complete = len(found) < wanted and self.listing_items > 0
                record = collection_record(
                    collection, items[: self.listing_items] if complete else None, found[0] if found else None
                )
                if not complete:
                    record.items = items[: self.listing_items] if self.listing_items else []
                    record.item_count = search.matched()
                records[collection.id] = record
        except Exception as exc:  # pystac-client raises plain APIError/requests errors
            raise UpstreamError(f"STAC API {self.url} failed: {exc}") from exc
        return records

    def items(
        self, collection: CollectionRecord, interval: TimeInterval | None, bbox: BBox | None, limit: int
    ) -> list[ItemRecord]:
        client = self._open()
        datetime_arg = None
        if interval is not None and collection.time_resolved:
            datetime_arg = (
                f"{_iso(interval.start) if interval.start else '..'}/{_iso(interval.end) if interval.end else '..'}"
            )
        try:
            search = client.search(
                collections=[collection.id],
                bbox=list(bbox) if bbox else None,
                datetime=datetime_arg,
                max_items=limit,
                limit=min(limit, 100),  # page size: fewer round trips than a server's default of 10
            )
            items = [
                r
                for i in search.items()
                for r in item_records(i, collection.id)
                # A cube's steps come from one item: keep those in the period.
                if r.cube is None or interval is None or interval.overlaps(r.start, r.end)
            ]
        except Exception as exc:
            raise UpstreamError(f"STAC API search on {self.url} failed: {exc}") from exc
        return sorted(items, key=lambda i: i.start or dt.datetime.min.replace(tzinfo=dt.UTC))


def open_source(
    stac_url: str, guard: AssetGuard, *, kind: str, refresh_seconds: float, timeout: float, listing_items: int = 100
) -> CatalogSource:
    """Pick the source type; the configured location itself is trusted."""
    parts = urlsplit(stac_url)
    remote = parts.scheme in {"http", "https"}
    if remote:
        guard.allow_host(parts.hostname or "")
    else:
        guard.allow_root(Path(parts.path if parts.scheme == "file" else stac_url).resolve().parent)
    if kind == "auto":
        kind = "static" if (not remote or stac_url.endswith(".json")) else "api"
    if kind == "api":
        return StacApiSource(stac_url, refresh_seconds=refresh_seconds, timeout=timeout, listing_items=listing_items)
    return StaticCatalogSource(stac_url, guard, refresh_seconds=refresh_seconds, timeout=timeout)


# -- keyword search ------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def search_records(records: list[CollectionRecord], query: str, limit: int) -> list[tuple[float, CollectionRecord]]:
    """The collections matching `query`, best first (ties by id), with their relevance."""
    words = set(_WORD.findall(query.lower()))
    scored = []
    for record in records:
        score = _relevance(record, query.lower(), words)
        if score > 0:
            scored.append((score, record))
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return scored[:limit]


def _relevance(record: CollectionRecord, query: str, words: set[str]) -> float:
    """Keyword relevance: whole-query hits, word hits in id/title/keywords/description, fuzzy id."""
    score = 0.0
    title = record.title.lower()
    keywords = " ".join(record.keywords).lower()
    description = record.description.lower()
    if query in record.id or query in title or query in keywords:
        score += 3
    title_words = set(_WORD.findall(f"{record.id} {title}"))
    keyword_words = set(_WORD.findall(keywords))
    description_words = set(_WORD.findall(description))
    for word in words:
        if len(word) < 2:
            continue
        stem = word.rstrip("s") if len(word) > 3 else word
        if word in title_words or stem in title_words:
            score += 2
        elif word in keyword_words or stem in keyword_words:
            score += 1.5
        elif word in description_words or stem in description_words:
            score += 0.5
        elif any(difflib.SequenceMatcher(None, word, k).ratio() > 0.85 for k in title_words | keyword_words):
            score += 0.75
    return score
