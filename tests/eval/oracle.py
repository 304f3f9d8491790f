"""Expected answers, computed at run time from the data the stack serves.

Rasters come from the STAC catalog under the data directory (the COG of each item, read with rasterio;
polygons with exactextract, each cell weighted by the share the polygon covers times its area);
places from the same package files the vector loader reads (`stacgis_vector.loader`). Nothing here
calls the services, so an expectation is an independent computation, and a task whose premise no
longer holds (a dataset that was said to be missing now exists) fails loudly instead of scoring.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import shapely
from exactextract import exact_extract
from exactextract.raster import RasterioRasterSource
from pyproj import Transformer
from rasterio.crs import CRS
from rasterio.io import MemoryFile
from rasterio.windows import Window
from shapely.geometry import box, mapping
from shapely.geometry.base import BaseGeometry

from stacgis_common.answer import mentions

WGS84 = CRS.from_epsg(4326)


class OracleError(RuntimeError):
    """The expected value cannot be computed: the task or the data is wrong, not the agent."""


@dataclass(frozen=True)
class Band:
    index: int
    name: str
    unit: str | None
    classes: dict[int, str]  # value -> name (title and slug both accepted on lookup)


@dataclass(frozen=True)
class Item:
    id: str
    href: Path
    start: dt.datetime | None
    end: dt.datetime | None
    bbox: tuple[float, ...] | None = None
    properties: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Collection:
    id: str
    title: str
    keywords: list[str]
    description: str
    time_resolved: bool
    bands: list[Band]
    items: list[Item]
    bbox: tuple[float, float, float, float]

    def band(self, wanted: int | str | None) -> Band:
        if wanted is None:
            return self.bands[0]
        for band in self.bands:
            if band.index == wanted or str(band.name).lower() == str(wanted).lower():
                return band
        raise OracleError(f"{self.id} has no band {wanted!r} (bands: {[b.name for b in self.bands]})")

    def text(self) -> str:
        """What names this collection's variable: id, title, keywords and band names."""
        bands = " ".join(f"{b.name} {b.unit or ''}" for b in self.bands)
        return f"{self.id} {self.title} {' '.join(self.keywords)} {bands}".lower()


@dataclass(frozen=True)
class Expected:
    """What the answer must hold: a number (in `unit`), a text, or coordinates; `detail` says how."""

    value: float | str | None = None
    unit: str | None = None
    lat: float | None = None
    lon: float | None = None
    terms: tuple[str, ...] = ()
    detail: str = ""


def _time(value: Any) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def parse_period(text: str) -> tuple[dt.datetime, dt.datetime]:
    """'1999', '1999-07', '1999-07-15' or 'a/b' as a closed UTC interval."""
    if "/" in text:
        first, last = text.split("/", 1)
        return parse_period(first)[0], parse_period(last)[1]
    parts = [int(p) for p in text.split("-")]
    if len(parts) == 1:
        start = dt.datetime(parts[0], 1, 1, tzinfo=dt.UTC)
        end = dt.datetime(parts[0], 12, 31, 23, 59, 59, tzinfo=dt.UTC)
    elif len(parts) == 2:
        start = dt.datetime(parts[0], parts[1], 1, tzinfo=dt.UTC)
        last_day = calendar.monthrange(parts[0], parts[1])[1]
        end = dt.datetime(parts[0], parts[1], last_day, 23, 59, 59, tzinfo=dt.UTC)
    else:
        start = dt.datetime(parts[0], parts[1], parts[2], tzinfo=dt.UTC)
        end = start + dt.timedelta(days=1) - dt.timedelta(seconds=1)
    return start, end


class Catalog:
    """The static STAC catalog the raster tools serve (read as plain JSON, links followed)."""

    def __init__(self, catalog_path: Path) -> None:
        if not catalog_path.exists():
            raise OracleError(f"no STAC catalog at {catalog_path}: build the demo data first (make data)")
        self.path = catalog_path
        self.collections: dict[str, Collection] = {}
        root = json.loads(catalog_path.read_text())
        for link in root.get("links", []):
            if link.get("rel") == "child":
                collection = self._collection(catalog_path.parent / link["href"])
                self.collections[collection.id] = collection

    def _collection(self, path: Path) -> Collection:
        data = json.loads(path.read_text())
        items = []
        bands: list[Band] = []
        for link in data.get("links", []):
            if link.get("rel") != "item":
                continue
            item_path = (path.parent / link["href"]).resolve()
            item = json.loads(item_path.read_text())
            asset = item["assets"].get("data") or next(iter(item["assets"].values()))
            props = item.get("properties", {})
            start = _time(props.get("start_datetime") or props.get("datetime"))
            end = _time(props.get("end_datetime") or props.get("datetime"))
            bbox = tuple(float(v) for v in item["bbox"]) if item.get("bbox") else None
            items.append(Item(item["id"], (item_path.parent / asset["href"]).resolve(), start, end, bbox, props))
            if not bands:
                for index, band in enumerate(asset.get("raster:bands", []), start=1):
                    classes: dict[int, str] = {}
                    for entry in band.get("classification:classes", []):
                        classes[int(entry["value"])] = str(entry.get("title") or entry.get("name"))
                    bands.append(Band(index, str(band.get("name", index)), band.get("unit"), classes))
        items.sort(key=lambda i: i.start or dt.datetime.min.replace(tzinfo=dt.UTC))
        extent = data.get("extent", {}).get("spatial", {}).get("bbox", [[-180, -90, 180, 90]])[0]
        return Collection(
            id=data["id"],
            title=data.get("title", ""),
            keywords=[str(k) for k in data.get("keywords", [])],
            description=data.get("description", ""),
            time_resolved=bool(data.get("stacgis:time_resolved", len(items) > 1)),
            bands=bands,
            items=items,
            bbox=(float(extent[0]), float(extent[1]), float(extent[2]), float(extent[3])),
        )

    def collection(self, collection_id: str) -> Collection:
        try:
            return self.collections[collection_id]
        except KeyError:
            raise OracleError(
                f"the catalog has no collection {collection_id!r} (it has {sorted(self.collections)})"
            ) from None

    def items(self, collection: Collection, period: str | None) -> list[Item]:
        """Items of a period (time-resolved collections), else the latest one, as the tools choose."""
        if not collection.time_resolved or period is None:
            return [collection.items[-1]]
        start, end = parse_period(period)
        chosen = [i for i in collection.items if i.start and i.end and i.start <= end and i.end >= start]
        if not chosen:
            raise OracleError(f"{collection.id} has no item in {period}")
        return chosen


@dataclass
class Places:
    """Countries, cities and US states as the vector loader reads them from its package cache."""

    cache_dir: Path
    _datasets: dict[str, Any] = field(default_factory=dict)

    def _records(self, dataset: str) -> list[Any]:
        if dataset not in self._datasets:
            from stacgis_common.packages import FetchError, PackageCache
            from stacgis_vector.loader.datasets import DATASETS, LoadOptions

            if dataset not in DATASETS:
                raise OracleError(f"unknown vector dataset {dataset!r} (known: {sorted(DATASETS)})")
            try:
                data = DATASETS[dataset](PackageCache(self.cache_dir), LoadOptions())
            except FetchError as error:
                raise OracleError(f"cannot read the {dataset} source files from {self.cache_dir}: {error}") from error
            self._datasets[dataset] = data.records
        records: list[Any] = self._datasets[dataset]
        return records

    def find(self, dataset: str, name: str) -> Any:
        """The record named `name`; the most populous one when several share the name (as search ranks)."""
        matches = [r for r in self._records(dataset) if r.name.lower() == name.lower()]
        if not matches:
            matches = [r for r in self._records(dataset) if name.lower() in (a.lower() for a in r.alternate_names)]
        if not matches:
            raise OracleError(f"no feature named {name!r} in {dataset}")
        return max(matches, key=lambda r: r.population or 0)

    def geometry(self, dataset: str, name: str) -> BaseGeometry:
        geometry: BaseGeometry = self.find(dataset, name).geometry
        return geometry

    def point(self, dataset: str, name: str) -> tuple[float, float]:
        """(lon, lat): a city's coordinates, or an area's label point."""
        record = self.find(dataset, name)
        geometry = record.geometry
        if geometry.geom_type == "Point":
            return float(geometry.x), float(geometry.y)
        return float(record.anchor[0]), float(record.anchor[1])


def _to_crs(geometry: BaseGeometry, crs: CRS | None) -> BaseGeometry:
    if crs is None or crs == WGS84 or (crs.is_geographic and crs.to_epsg() == 4326):
        return geometry
    transformer = Transformer.from_crs(WGS84, crs, always_xy=True)
    minx, miny, maxx, maxy = geometry.bounds
    dense = shapely.segmentize(geometry, max(maxx - minx, maxy - miny) / 64 or 1e-6)
    return shapely.transform(dense, lambda xy: np.column_stack(transformer.transform(xy[:, 0], xy[:, 1])))


def zonal_sample(href: Path, band: int, geometry: BaseGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Valid values under a WGS 84 polygon and their weights (covered share x cell area)."""
    with rasterio.open(href) as ds:
        geographic = ds.crs is None or ds.crs.is_geographic
        local = _to_crs(geometry, ds.crs)
        weight = "area_spherical_m2" if geographic else "area_cartesian"
        result = exact_extract(
            RasterioRasterSource(ds, band),
            [{"type": "Feature", "properties": {}, "geometry": mapping(local)}],
            ["v=values", f"w=coverage(coverage_weight={weight})"],
            output="geojson",
        )
    props = result[0]["properties"]
    values = np.asarray(props["v"], dtype="float64")
    weights = np.asarray(props["w"], dtype="float64")
    keep = np.isfinite(values) & (weights > 0)
    return values[keep], weights[keep]


COMPOSITES: dict[str, Callable[..., np.ndarray]] = {
    "mean": np.nanmean,
    "median": np.nanmedian,
    "max": np.nanmax,
    "min": np.nanmin,
}


def composite_sample(hrefs: list[Path], band: int, geometry: BaseGeometry, how: str) -> tuple[np.ndarray, np.ndarray]:
    """`zonal_sample` of the per-cell composite of items on one grid (no-data left out per cell)."""
    if how not in COMPOSITES:
        raise OracleError(f"unknown composite {how!r} (known: {sorted(COMPOSITES)})")
    stack = []
    for href in hrefs:
        with rasterio.open(href) as ds:
            profile = ds.profile
            stack.append(ds.read(band, masked=True).astype("float64").filled(np.nan))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells stay NaN (no-data)
        data = COMPOSITES[how](np.stack(stack), axis=0)
    profile.update(count=1, dtype="float64", nodata=np.nan, driver="GTiff")
    profile.pop("blockxsize", None)
    profile.pop("blockysize", None)
    with MemoryFile() as memory:
        with memory.open(**profile) as out:
            out.write(data, 1)
        return zonal_sample(Path(memory.name), 1, geometry)


def point_value(href: Path, band: int, lon: float, lat: float) -> float | None:
    """The cell value under a point; None outside the grid or on no-data."""
    with rasterio.open(href) as ds:
        x, y = lon, lat
        if ds.crs is not None and not ds.crs.is_geographic:
            x, y = Transformer.from_crs(WGS84, ds.crs, always_xy=True).transform(lon, lat)
        b = ds.bounds
        if not (b.left <= x < b.right and b.bottom < y <= b.top):
            return None
        row, col = ds.index(x, y)
        cell = ds.read(band, window=Window(col, row, 1, 1), masked=True)
    if cell.mask.any():
        return None
    value = float(cell.data[0, 0])
    return value if math.isfinite(value) else None


class Oracle:
    """Computes a task's `expect` block. Each operation is one method named `op_<name>`."""

    def __init__(self, data_dir: Path, cache_dir: Path, knowledge_dir: Path) -> None:
        self.data_dir = data_dir
        self.places = Places(cache_dir)
        self.knowledge_dir = knowledge_dir

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.data_dir / "stac" / "catalog.json")

    def compute(self, expect: dict[str, Any]) -> Expected:
        op = expect.get("op")
        method: Callable[[dict[str, Any]], Expected] | None = getattr(self, f"op_{op}", None)
        if method is None:
            raise OracleError(f"unknown expectation op {op!r}")
        try:
            return method(expect)
        except OracleError:
            raise
        except (KeyError, ValueError, TypeError, OSError, rasterio.errors.RasterioError) as error:
            raise OracleError(f"{op}: {type(error).__name__}: {error}") from error

    # -- where ----------------------------------------------------------------------------

    def _area(self, spec: dict[str, Any]) -> tuple[BaseGeometry, str]:
        if "place" in spec:
            place = spec["place"]
            return self.places.geometry(place["dataset"], place["name"]), f"{place['name']} ({place['dataset']})"
        if "bbox" in spec:
            return box(*spec["bbox"]), f"bbox {spec['bbox']}"
        raise OracleError("the expectation needs `place` or `bbox`")

    def _point(self, spec: dict[str, Any]) -> tuple[float, float, str]:
        if "place" in spec:
            place = spec["place"]
            lon, lat = self.places.point(place["dataset"], place["name"])
            return lon, lat, f"{place['name']} ({lon:.4f}, {lat:.4f})"
        return float(spec["lon"]), float(spec["lat"]), f"({spec['lon']}, {spec['lat']})"

    # -- numbers --------------------------------------------------------------------------

    def _area_mean(self, collection: Collection, band: Band, items: list[Item], geometry: BaseGeometry) -> float:
        """Area-weighted mean of the per-cell mean over the items (one item: that item)."""
        means = []
        for item in items:
            values, weights = zonal_sample(item.href, band.index, geometry)
            if weights.sum() <= 0:
                raise OracleError(f"{collection.id}: no valid cell under the area")
            means.append(float(np.average(values, weights=weights)))
        return float(np.mean(means))

    def op_zonal(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        geometry, where = self._area(spec)
        items = self.catalog.items(collection, spec.get("datetime"))
        stat = spec.get("stat", "mean")
        if "composite" in spec:
            # A temporal composite (per cell over the period's items), then its area-weighted mean.
            how = str(spec["composite"])
            values, weights = composite_sample([i.href for i in items], band.index, geometry, how)
            if weights.sum() <= 0:
                raise OracleError(f"{collection.id}: no valid cell under {where}")
            value = float(np.average(values, weights=weights))
            return Expected(value, band.unit, detail=f"mean of the {how} composite of {len(items)} items over {where}")
        if stat == "mean":
            value = self._area_mean(collection, band, items, geometry)
            return Expected(value, band.unit, detail=f"area-weighted mean of {collection.id} over {where}")
        values, weights = zonal_sample(items[-1].href, band.index, geometry)
        if values.size == 0:
            raise OracleError(f"{collection.id}: no valid cell under {where}")
        if stat in ("min", "max"):
            value = float(values.min() if stat == "min" else values.max())
            return Expected(value, band.unit, detail=f"{stat} of {collection.id} over {where}")
        if stat == "class_share":
            code = self._class_code(band, str(spec["class"]))
            share = float(weights[values.astype("int64") == code].sum() / weights.sum()) * 100
            return Expected(share, "%", detail=f"share of class {spec['class']} in {collection.id} over {where}")
        if stat == "majority":
            codes = values.astype("int64")
            best = max(np.unique(codes), key=lambda c: float(weights[codes == c].sum()))
            name = band.classes.get(int(best), str(best))
            return Expected(name, None, terms=(name,), detail=f"majority class of {collection.id} over {where}")
        raise OracleError(f"unknown stat {stat!r}")

    def _class_code(self, band: Band, wanted: str) -> int:
        for code, name in band.classes.items():
            slug = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
            if wanted.lower() in (name.lower(), slug, str(code)):
                return code
        if not band.classes and wanted.isdigit():
            return int(wanted)
        raise OracleError(f"no class {wanted!r} in band {band.name} (classes: {sorted(band.classes.values())})")

    def op_point(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        lon, lat, where = self._point(spec)
        item = self.catalog.items(collection, spec.get("datetime"))[-1]
        value = point_value(item.href, band.index, lon, lat)
        if value is None:
            raise OracleError(f"{collection.id} has no value at {where}")
        if band.classes:
            name = band.classes.get(int(value), str(int(value)))
            return Expected(name, None, terms=(name,), detail=f"class of {collection.id} at {where}")
        return Expected(value, band.unit, detail=f"{collection.id} {band.name} at {where}, item {item.id}")

    def op_series(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        lon, lat, where = self._point(spec)
        period = spec.get("period")
        items = (
            self.catalog.items(collection, period) if period else [i for i in collection.items if i.start is not None]
        )
        series = [(item, point_value(item.href, band.index, lon, lat)) for item in items]
        return _reduced(collection, band, series, str(spec.get("reduce", "mean")), where)

    def op_area_series(self, spec: dict[str, Any]) -> Expected:
        """A reduction of the series of area-weighted means, one per time step."""
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        geometry, where = self._area(spec)
        period = spec.get("period")
        items = (
            self.catalog.items(collection, period) if period else [i for i in collection.items if i.start is not None]
        )
        series: list[tuple[Item, float | None]] = []
        for item in items:
            values, weights = zonal_sample(item.href, band.index, geometry)
            series.append((item, float(np.average(values, weights=weights)) if weights.sum() > 0 else None))
        return _reduced(collection, band, series, str(spec.get("reduce", "mean")), where)

    def op_scene_count(self, spec: dict[str, Any]) -> Expected:
        """Items of a scene collection whose footprint box meets the area (and period), with at most
        `max_cloud_cover` % cloud: what an item search with those filters counts."""
        collection = self.catalog.collection(spec["collection"])
        geometry, where = self._area(spec)
        items = self.catalog.items(collection, spec["datetime"]) if "datetime" in spec else collection.items
        found = [i for i in items if i.bbox is not None and box(*i.bbox).intersects(geometry)]
        if "max_cloud_cover" in spec:
            limit = float(spec["max_cloud_cover"])
            cover = [i.properties.get("eo:cloud_cover") for i in found]
            found = [i for i, c in zip(found, cover, strict=True) if c is not None and float(c) <= limit]
        if not found:
            raise OracleError(f"no item of {collection.id} matches {where}: the task would ask for nothing")
        return Expected(float(len(found)), None, detail=f"items of {collection.id} over {where}")

    def op_change(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        geometry, where = self._area(spec)
        mean_a = self._area_mean(collection, band, self.catalog.items(collection, spec["period_a"]), geometry)
        mean_b = self._area_mean(collection, band, self.catalog.items(collection, spec["period_b"]), geometry)
        return Expected(
            mean_b - mean_a,
            band.unit,
            detail=f"mean {spec['period_b']} ({mean_b:.4g}) - mean {spec['period_a']} ({mean_a:.4g}) over {where}",
        )

    def op_change_percent(self, spec: dict[str, Any]) -> Expected:
        change = self.op_change(spec)
        collection = self.catalog.collection(spec["collection"])
        band = collection.band(spec.get("band"))
        geometry, where = self._area(spec)
        mean_a = self._area_mean(collection, band, self.catalog.items(collection, spec["period_a"]), geometry)
        assert isinstance(change.value, float)
        return Expected(100 * change.value / abs(mean_a), "%", detail=f"change in % of {spec['period_a']} over {where}")

    def op_difference(self, spec: dict[str, Any]) -> Expected:
        a, b = self.compute(spec["a"]), self.compute(spec["b"])
        if not isinstance(a.value, float) or not isinstance(b.value, float):
            raise OracleError("difference needs two numbers")
        return Expected(b.value - a.value, b.unit, detail=f"({b.detail}) - ({a.detail})")

    def op_larger(self, spec: dict[str, Any]) -> Expected:
        """Which of two labelled quantities is larger: the answer must name it."""
        a, b = self.compute(spec["a"]), self.compute(spec["b"])
        if not isinstance(a.value, float) or not isinstance(b.value, float):
            raise OracleError("larger needs two numbers")
        name = spec["a_label"] if a.value > b.value else spec["b_label"]
        return Expected(name, None, terms=(name,), detail=f"{a.value:.4g} vs {b.value:.4g}")

    def op_item_count(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        return Expected(float(len(collection.items)), None, detail=f"items of {collection.id}")

    # -- places, map, knowledge, memory -----------------------------------------------------

    def op_place_point(self, spec: dict[str, Any]) -> Expected:
        lon, lat = self.places.point(spec["dataset"], spec["name"])
        return Expected(lat=lat, lon=lon, detail=f"{spec['name']} in {spec['dataset']}")

    def op_terms(self, spec: dict[str, Any]) -> Expected:
        """Words the answer must contain; with `source`, each must appear in that knowledge file."""
        terms = tuple(str(t) for t in spec["terms"])
        if "source" in spec:
            path = self.knowledge_dir / spec["source"]
            if not path.exists():
                raise OracleError(f"knowledge file {path} does not exist")
            text = path.read_text()
            absent = [t for t in terms if not mentions(text, t)]
            if absent:
                raise OracleError(f"{spec['source']} does not mention {absent}: the task no longer matches it")
        return Expected(terms=terms, detail=f"mentions {list(terms)}")

    def op_memory(self, spec: dict[str, Any]) -> Expected:
        """An add_memory call whose content holds every term."""
        return Expected(terms=tuple(str(t) for t in spec["terms"]), detail=f"add_memory with {spec['terms']}")

    def op_frontend(self, spec: dict[str, Any]) -> Expected:
        if "place" in spec:
            lon, lat = self.places.point(spec["place"]["dataset"], spec["place"]["name"])
            return Expected(lat=lat, lon=lon, detail=f"{spec['name']} at {spec['place']['name']}")
        wanted = spec.get("arguments", {}).get("collection_id")
        for collection_id in wanted if isinstance(wanted, list) else [wanted] if wanted else []:
            self.catalog.collection(collection_id)
        return Expected(detail=f"{spec['name']} with {spec.get('arguments', {})}")

    # -- what the data cannot answer (each check proves the premise still holds) --------------

    def _mentioning(self, terms: Iterable[str]) -> list[Collection]:
        words = [t.lower() for t in terms]
        return [c for c in self.catalog.collections.values() if any(w in c.text() for w in words)]

    def op_no_collection(self, spec: dict[str, Any]) -> Expected:
        found = self._mentioning(spec["terms"])
        if found:
            raise OracleError(f"collections now hold {spec['terms']}: {[c.id for c in found]}; the task is answerable")
        return Expected(detail=f"no collection of {spec['terms']}")

    def op_not_covered(self, spec: dict[str, Any]) -> Expected:
        """Every collection of the variable misses the place (outside its grid or no-data there)."""
        found = self._mentioning(spec["variable"])
        if not found:
            raise OracleError(f"no collection of {spec['variable']} at all: use op no_collection")
        lon, lat, where = self._point(spec)
        for collection in found:
            for item in collection.items:
                band = collection.band(None)
                if point_value(item.href, band.index, lon, lat) is not None:
                    raise OracleError(f"{collection.id} has {spec['variable']} at {where}; the task is answerable")
        return Expected(detail=f"none of {[c.id for c in found]} covers {where}")

    def op_outside_period(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        start, end = parse_period(spec["datetime"])
        overlapping = [i.id for i in collection.items if i.start and i.end and i.start <= end and i.end >= start]
        if overlapping and collection.time_resolved:
            raise OracleError(f"{collection.id} has items in {spec['datetime']}: {overlapping}")
        first, last = collection.items[0].start, collection.items[-1].end
        return Expected(detail=f"{collection.id} covers {first:%Y-%m} to {last:%Y-%m} only" if first and last else "")

    def op_all_of(self, spec: dict[str, Any]) -> Expected:
        """Several premises of one refusal (e.g. no data for the period and none for the place)."""
        details = [self.compute(check).detail for check in spec["checks"]]
        return Expected(detail="; ".join(details))

    def op_absent_band(self, spec: dict[str, Any]) -> Expected:
        collection = self.catalog.collection(spec["collection"])
        wanted = str(spec["band"]).lower()
        if any(wanted in f"{b.name} {b.unit or ''}".lower() for b in collection.bands):
            raise OracleError(f"{collection.id} has a band {spec['band']!r}")
        return Expected(detail=f"{collection.id} bands: {[b.name for b in collection.bands]}")


def _reduced(
    collection: Collection, band: Band, series: list[tuple[Item, float | None]], reduce: str, where: str
) -> Expected:
    """One figure of a time series: its mean/min/max/sum, or the month of its highest/lowest value."""
    valid = [(item, v) for item, v in series if v is not None]
    if not valid:
        raise OracleError(f"{collection.id} has no value at {where}")
    values = [v for _, v in valid]
    if reduce in ("mean", "min", "max", "sum"):
        reducers: dict[str, Callable[[list[float]], Any]] = {
            "mean": np.mean,
            "min": np.min,
            "max": np.max,
            "sum": np.sum,
        }
        value = float(reducers[reduce](values))
        return Expected(value, band.unit, detail=f"{reduce} of {len(values)} steps of {collection.id} at {where}")
    if reduce in ("argmax", "argmin"):
        pick = max if reduce == "argmax" else min
        item, _ = pick(valid, key=lambda pair: pair[1])
        assert item.start is not None
        month = calendar.month_name[item.start.month]
        # The month by name or as the ISO date a series result gives ("1999-07").
        spelled = f"{month}|{item.start:%Y-%m}"
        return Expected(month, None, terms=(spelled,), detail=f"{reduce} month of {collection.id} at {where}")
    raise OracleError(f"unknown reduce {reduce!r}")
