"""The raster operations behind the MCP tools, independent of the MCP layer.

Arguments are validated here (each error names its argument); blocking reads
run in a bounded thread pool under the configured GDAL environment.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import numpy as np
import rasterio
from shapely import affinity
from shapely.geometry import Point, box
from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import ArgumentError, NotFoundError
from stacgis_raster import rasterops, reads
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import BandInfo, CatalogSource, CollectionRecord, ItemRecord
from stacgis_raster.errors import UpstreamError
from stacgis_raster.features import FeatureResolver, ResolvedPlace
from stacgis_raster.metrics import OVERVIEW_READS
from stacgis_raster.reads import Area, ReadLimits
from stacgis_raster.settings import RasterSettings
from stacgis_raster.signing import Signer
from stacgis_raster.validation import (
    BBox,
    TimeInterval,
    boxes_overlap,
    check_lon_lat,
    is_feature_reference,
    parse_bbox,
    parse_geojson_geometry,
    parse_interval,
)
from stacgis_raster.workers import ReadPool

T = TypeVar("T")

_WORD = re.compile(r"[a-z0-9]+")


def _iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if value else None


def _band_json(band: BandInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"index": band.index, "name": band.name, "unit": band.unit}
    if band.description:
        out["description"] = band.description
    return out


def _classify(value: float | None, band: BandInfo) -> Any:
    if value is None or not band.classes:
        return value
    return {"value": int(value), "class": band.classes.get(int(value), "unnamed class")}


# Names of statistics a model writes where a band is asked; no band is named so.
STATISTIC_WORDS = frozenset(
    {"mean", "average", "avg", "min", "minimum", "max", "maximum", "median", "sum", "std", "total", "count"}
    | {"share", "fraction", "percent", "percentage", "proportion", "majority", "mode", "class", "classes"}
)


def interval_for(record: CollectionRecord, value: Any) -> TimeInterval | None:
    """The `datetime` argument for a collection. One that is not time-resolved has no dates to choose
    from, so whatever a model put there ("not time-resolved", copied from the catalogue) is ignored;
    the result's time note says the collection is not time-resolved."""
    return parse_interval(value) if record.time_resolved else None


class RasterService:
    def __init__(
        self,
        settings: RasterSettings,
        source: CatalogSource,
        guard: AssetGuard,
        resolver: FeatureResolver,
        signer: Signer | None = None,
    ) -> None:
        self.settings = settings
        self.source = source
        self.guard = guard
        self.resolver = resolver
        self.signer = signer or Signer(None, [], settings.stac_timeout_seconds)
        self.limiter = anyio.CapacityLimiter(settings.io_workers)
        self._gdal_env = settings.gdal_env()
        self.limits = ReadLimits(settings.stats_target_pixels, settings.zonal_max_cells, settings.max_pixels_per_read)
        self._pool: ReadPool | None = None

    # -- plumbing --------------------------------------------------------------------

    def start(self) -> None:
        if self._pool is None:
            self._pool = ReadPool(self.settings.io_workers, self._gdal_env)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Catalog work (STAC JSON, no pixel reads) in a bounded thread pool."""

        def call() -> T:
            with rasterio.Env(**self._gdal_env):
                return fn(*args)

        return await anyio.to_thread.run_sync(call, limiter=self.limiter, abandon_on_cancel=True)

    async def read(
        self,
        fn: Callable[..., T],
        *args: Any,
        deadline_s: float | None = None,
        what: str = "the raster read",
        setting: str = "RASTER_TOOL_TIMEOUT_SECONDS",
    ) -> T:
        """Pixel reads in a worker process, stopped (the process replaced) past the deadline."""
        self.start()
        assert self._pool is not None
        limit = self.settings.tool_timeout_seconds if deadline_s is None else deadline_s
        return await self._pool.call(fn, *args, deadline_s=limit, what=what, setting=setting)

    async def collection(
        self, collection_id: Any, argument: str = "collection_id", *, scenes: bool = False
    ) -> CollectionRecord:
        """A collection by id; a scene collection only where `scenes` says the caller reads one
        (the single-asset tools would read one band of one item of it)."""
        if not isinstance(collection_id, str) or not collection_id.strip():
            raise ArgumentError(argument, "expected a collection id string")
        record = await self.run(self.source.collection, collection_id.strip(), argument)
        if record.scenes and not scenes:
            raise ArgumentError(
                argument,
                f"'{record.id}' is a scene collection (many items, one asset per band: "
                f"{', '.join(record.asset_bands)}); use get_scene_statistics or get_scene_timeseries "
                "with an expression such as 'ndvi', or search_items",
            )
        return record

    async def collections(self) -> list[CollectionRecord]:
        return await self.run(self.source.collections)

    async def items(
        self,
        record: CollectionRecord,
        interval: TimeInterval | None,
        bbox: BBox | None,
        limit: int,
        argument: str = "datetime",
        area_argument: str = "bbox",
    ) -> list[ItemRecord]:
        items = await self.run(self.source.items, record, interval, bbox, limit)
        if not items:
            if interval is not None and record.time_resolved:
                # Name the collections that do have data then (and there): a small model picks the
                # right one from a list of ids far more often than it finds it by itself.
                others = [
                    r.id
                    for r in sorted(await self.collections(), key=lambda r: r.id)
                    if r.id != record.id
                    and not r.scenes  # read by other tools than the one that failed
                    and r.time_resolved
                    and interval.overlaps(r.start, r.end)
                    and boxes_overlap(bbox, r.bbox)
                ]
                raise ArgumentError(
                    argument,
                    f"no data in '{record.id}' for {interval.text}; the collection covers {record.temporal_label()}. "
                    f"Collections with data for {interval.text}"
                    + (" there" if bbox is not None else "")
                    + f": {', '.join(others) or 'none'}",
                )
            extent = [round(v, 6) for v in record.bbox] if record.bbox else None
            raise ArgumentError(
                area_argument if bbox else "collection_id",
                f"the requested area does not overlap '{record.id}', whose extent is {extent}",
            )
        return items

    async def latest_or_matching(
        self,
        record: CollectionRecord,
        interval: TimeInterval | None,
        bbox: BBox | None,
        limit: int,
        area_argument: str = "bbox",
    ) -> tuple[list[ItemRecord], str]:
        """Items to read and a sentence saying which were chosen."""
        if not record.time_resolved:
            items = await self.items(record, None, bbox, limit, area_argument=area_argument)
            note = "collection is not time-resolved"
            if interval is not None:
                note += f"; datetime '{interval.text}' does not apply to it"
            return items, note
        if interval is None:
            items = await self.items(
                record, None, bbox, self.settings.max_timeseries_items, area_argument=area_argument
            )
            return [items[-1]], f"latest time step used ({items[-1].time_label()}); pass datetime to choose"
        items = await self.items(record, interval, bbox, limit, area_argument=area_argument)
        return items, f"{len(items)} time step(s) match '{interval.text}'"

    def band(self, record: CollectionRecord, band: Any, argument: str = "band") -> BandInfo:
        if not record.bands:
            raise UpstreamError(f"collection '{record.id}' describes no raster bands")
        if band is None or (isinstance(band, str) and band.strip().lower() in STATISTIC_WORDS):
            # "band": "mean" is a statistic the model wants, not a band: every result has them all.
            return record.bands[0]
        if isinstance(band, int) and not isinstance(band, bool):
            if 1 <= band <= len(record.bands):
                return record.bands[band - 1]
        elif isinstance(band, str):
            if band.isdigit() and 1 <= int(band) <= len(record.bands):
                return record.bands[int(band) - 1]
            for info in record.bands:
                if info.name.lower() == band.lower():
                    return info
            wanted = band.strip().lower()
            # The quantity written as the band ("temperature" for tas) of a one-band collection about it.
            if len(record.bands) == 1 and wanted in {k.lower() for k in record.keywords}:
                return record.bands[0]
            # A class written as the band ("forest" for the share of Evergreen Forest): the band holding it.
            for info in record.bands:
                if wanted and any(wanted in name.lower() for name in (info.classes or {}).values()):
                    return info
        names = ", ".join(f"{b.index}={b.name}" for b in record.bands)
        raise ArgumentError(argument, f"'{band}' is not a band of '{record.id}'; bands are {names}")

    async def place_area(self, place: Any, token: Callable[[], str]) -> tuple[Area, dict[str, Any]]:
        """A named place's area: a country's or state's real boundary, or a circle around a city."""
        resolved = await self.resolver.place(place, "place", token())
        info = dict(resolved.place)
        geom = parse_geojson_geometry(
            resolved.geometry, "place", polygonal=False, max_vertices=self.settings.max_geometry_vertices
        )
        if isinstance(geom, Point):
            km = self.settings.place_point_buffer_km
            info["used"] = {"circle_radius_km": km, "point": [geom.x, geom.y]}
            return Area(point_circle(geom.x, geom.y, km), "place", "place", info["ref"]), info
        if geom.geom_type not in {"Polygon", "MultiPolygon"}:
            raise ArgumentError("place", f"{info['name']!r} is a {geom.geom_type}, not an area or a point")
        info["used"] = "boundary"
        return Area(geom, "place", "place", info["ref"]), info

    async def place_point(self, place: Any, token: Callable[[], str]) -> tuple[float, float, dict[str, Any]]:
        """A named city's point. A name that means an area first ("Luxembourg", the country) means its
        city of that name when there is one; an area alone is refused (one value needs one spot)."""
        resolved = await self.resolver.place(place, "place", token())
        info = dict(resolved.place)
        if resolved.geometry.get("type") != "Point":
            area = info
            city: ResolvedPlace | None
            try:
                city = await self.resolver.place(place, "place", token(), dataset="cities")
            except (ArgumentError, NotFoundError):
                city = None
            if city is None or city.geometry.get("type") != "Point":
                raise ArgumentError(
                    "place",
                    f"{area['name']!r} is a {area.get('kind', 'area')} (an area), not a point; name a city or give "
                    "lon/lat, or use get_raster_statistics with this place for the area",
                )
            resolved = city
            info = dict(city.place)
            info["note"] = f"the city {info['name']!r} used: a point tool needs a point, and {area['ref']} is an area"
        lon, lat = resolved.geometry["coordinates"][:2]
        x, y = check_lon_lat(lon, lat, lon_arg="place", lat_arg="place")
        info["used"] = "point"
        return x, y, info

    async def located_point(
        self, place: Any, lon: Any, lat: Any, token: Callable[[], str] | None
    ) -> tuple[float, float, dict[str, Any] | None]:
        """The point of `place` when given (lon/lat then ignored, and said so), else lon/lat."""
        if place is not None and token is not None:
            x, y, info = await self.place_point(place, token)
            if lon is not None or lat is not None:
                info["note"] = "place used; lon/lat ignored"
            return x, y, info
        if lon is None or lat is None:
            raise ArgumentError("place", "give place (a city name, e.g. 'Nairobi') or both lon and lat")
        x, y = check_lon_lat(lon, lat)
        return x, y, None

    async def located_area(
        self, place: Any, bbox: Any, geometry: Any, token: Callable[[], str], bbox_allowed: bool = True
    ) -> tuple[Area, dict[str, Any] | None]:
        """The area of `place` when given (bbox/geometry then ignored, and said so), else bbox or geometry."""
        if place is None:
            return await self.area(bbox, geometry, token=token, bbox_allowed=bbox_allowed), None
        area, info = await self.place_area(place, token)
        ignored = [name for name, value in (("bbox", bbox), ("geometry", geometry)) if value is not None]
        if ignored:
            info["note"] = f"place used; {' and '.join(ignored)} ignored"
        return area, info

    async def area(self, bbox: Any, geometry: Any, *, token: Callable[[], str], bbox_allowed: bool = True) -> Area:
        if bbox is not None and geometry is not None:
            raise ArgumentError("geometry", "give either bbox or geometry, not both")
        if geometry is not None:
            if is_feature_reference(geometry):
                resolved = await self.resolver.geometry(geometry, "geometry", token())
                geom = parse_geojson_geometry(resolved, "geometry", max_vertices=self.settings.max_geometry_vertices)
                return Area(geom, "feature", "geometry", {"dataset": geometry["dataset"], "id": geometry["id"]})
            geom = parse_geojson_geometry(geometry, "geometry", max_vertices=self.settings.max_geometry_vertices)
            return Area(geom, "geometry", "geometry", geom.geom_type)
        if bbox is not None and bbox_allowed:
            parsed = parse_bbox(bbox)
            return Area(box(*parsed), "bbox", "bbox", list(parsed))
        wanted = "place, bbox or geometry" if bbox_allowed else "place or geometry"
        raise ArgumentError(
            "place",
            f"{wanted} is required: best a place name, e.g. place 'Luxembourg' (or a GeoJSON polygon)",
        )

    def asset_href(self, href: str, collection_id: str) -> str:
        """A location a read worker may open: allowed by the guard, signed where its host needs it
        (blocking: a token may be fetched; call it through `run`)."""
        return self.signer.sign(self.guard.check(href), collection_id)

    async def hrefs(self, items: Sequence[ItemRecord]) -> list[str]:
        return await self.run(lambda: [self.asset_href(i.href, i.collection_id) for i in items])

    # -- discovery ---------------------------------------------------------------------

    async def list_collections(self, bbox: Any = None, datetime: Any = None) -> dict[str, Any]:
        box_filter = parse_bbox(bbox) if bbox is not None else None
        interval = parse_interval(datetime)
        records = await self.collections()
        out = []
        for record in sorted(records, key=lambda r: r.id):
            if not boxes_overlap(box_filter, record.bbox):
                continue
            if interval and record.time_resolved and not interval.overlaps(record.start, record.end):
                continue
            out.append(record.summary())
        result: dict[str, Any] = {"count": len(out), "collections": out}
        if interval:
            result["note"] = "collections that are not time-resolved are listed regardless of datetime"
        return result

    async def catalogue(self) -> dict[str, Any]:
        """Every collection for the `collections://list` resource: the listing plus the keywords and
        band names a client needs to tell which collection holds which variable."""
        records = await self.collections()
        out = [
            {**r.summary(), "keywords": r.keywords, "band_names": [b.name for b in r.bands]}
            for r in sorted(records, key=lambda r: r.id)
        ]
        return {"count": len(out), "collections": out}

    async def search_collections(self, query: Any, limit: int = 10) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise ArgumentError("query", "expected a non-empty search text, e.g. 'elevation Luxembourg'")
        if len(query) > 500:
            raise ArgumentError("query", "at most 500 characters")
        words = set(_WORD.findall(query.lower()))
        records = await self.collections()
        scored = []
        for record in records:
            score = _relevance(record, query.lower(), words)
            if score > 0:
                scored.append((score, record))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        hits = [{**r.summary(), "score": round(s, 2)} for s, r in scored[:limit]]
        result: dict[str, Any] = {"query": query, "count": len(hits), "collections": hits}
        if not hits:
            result["hint"] = "nothing matched; available ids: " + ", ".join(sorted(r.id for r in records))
        return result

    async def info(self, collection_id: Any) -> dict[str, Any]:
        record = await self.collection(collection_id, scenes=True)
        details = record.details()
        details["tiles"] = f"/tiles/{record.id}/{{z}}/{{x}}/{{y}}.png"
        details["tilejson"] = f"/tiles/{record.id}/tilejson.json"
        details["render_defaults"] = record.render or None
        return details

    # -- statistics --------------------------------------------------------------------

    async def statistics(
        self,
        collection_id: Any,
        bbox: Any,
        geometry: Any,
        datetime: Any,
        band: Any,
        token: Callable[[], str],
        place: Any = None,
    ) -> dict[str, Any]:
        if place is not None:
            # A named place is summarised over its real boundary with exact, area-weighted cell coverage.
            return await self.zonal(collection_id, geometry, datetime, band, token, place=place, bbox=bbox)
        point = _zero_size_box(bbox) if geometry is None else None
        if point is not None:
            return await self._cell_statistics(collection_id, point, datetime, band)
        record = await self.collection(collection_id)
        info = self.band(record, band)
        interval = interval_for(record, datetime)
        if bbox is None and geometry is None and record.bbox is not None:
            bbox = list(record.bbox)  # no area named: the whole collection
        area = await self.area(bbox, geometry, token=token)
        items, note = await self.latest_or_matching(
            record, interval, area.geometry.bounds, self.settings.max_change_items_per_period, area.argument
        )
        hrefs = await self.hrefs(items)
        stats, plan = await self.read(reads.composite_stats, self.limits, hrefs, area, info)
        if plan.factor > 1:
            OVERVIEW_READS.inc()
        result = {
            "collection_id": record.id,
            "band": _band_json(info),
            "unit": info.unit,
            "area": self.area_json(area, plan),
            "time": _time_json(record, items, note),
            "resolution": plan.resolution,
            "weighting": _weighting(plan),
            "statistics": stats,
        }
        if len(items) > 1:
            result["composite"] = f"per-pixel mean of {len(items)} time steps"
        return result

    def area_json(
        self, area: Area, plan: rasterops.ReadPlan | None = None, inside_fraction: float | None = None
    ) -> dict[str, Any]:
        fraction = plan.inside_fraction if plan is not None else inside_fraction
        out: dict[str, Any] = {"type": area.kind, area.kind if area.kind != "geometry" else "geometry_type": area.label}
        out["area_km2"] = rasterops._round(rasterops.spherical_area_km2(area.geometry), 6)
        if fraction is not None:
            out["fraction_inside_extent"] = round(fraction, 4)
            out["clipped"] = fraction < 0.9999
        return out

    # -- points and time series ------------------------------------------------------

    async def point(
        self,
        collection_id: Any,
        lon: Any,
        lat: Any,
        datetime: Any = None,
        place: Any = None,
        token: Callable[[], str] | None = None,
        outside_is_error: bool = True,
    ) -> dict[str, Any]:
        x, y, place_info = await self.located_point(place, lon, lat, token)
        record = await self.collection(collection_id)
        interval = interval_for(record, datetime)
        series: dict[str, Any] | None = None
        if record.time_resolved and interval is None:
            # No date asked for: the latest step is the value, and every step is summarised, so
            # "the warmest month of 1999 here" is answered whichever point tool was chosen.
            items = await self.items(record, None, None, self.settings.max_timeseries_items)
            values = await self.read(reads.point_values, await self.hrefs(items), x, y)
            series = _series_summary(items, values, record.bands[0]) if record.bands else None
            items, values = items[-1:], values[-1:]
            note = f"latest time step used ({items[0].time_label()}); pass datetime to choose"
            if series:
                note += f"; all {series['count']} time steps are summarised in all_time_steps"
        else:
            items, note = await self.latest_or_matching(record, interval, None, 48)
            values = await self.read(reads.point_values, await self.hrefs(items), x, y)
        if outside_is_error and not any(v.inside for v in values):
            # An error, not a result with "inside": false: a small model reads a result as an answer.
            raise ArgumentError("place" if place_info else "lon", await self._outside_message(record, x, y, place_info))
        results = []
        for item, value in zip(items, values, strict=True):
            entry: dict[str, Any] = {"item": item.id}
            if record.time_resolved:
                entry["time"] = item.time_label()
            if not value.inside:
                entry["inside"] = False
            else:
                entry["values"] = {b.name: _classify(v, b) for b, v in zip(record.bands, value.values, strict=False)}
                entry["pixel_center"] = value.pixel_center
            results.append(entry)
        inside = any(v.inside for v in values)
        out: dict[str, Any] = {
            "collection_id": record.id,
            **({"place": place_info} if place_info else {}),
            "lon": x,
            "lat": y,
            "units": {b.name: b.unit for b in record.bands},
            "time": note,
            "results": results,
        }
        classes = {
            name: str(value["class"])
            for name, value in (results[-1].get("values") or {}).items()
            if isinstance(value, dict) and "class" in value
        }
        if classes:
            # The class in words, first and alone: asked "land or water?" the model answered "land"
            # from "land = 0: Water" (the band's name); the band is named only when there are several.
            named = [f"{label} (band {name})" for name, label in classes.items()]
            if len(classes) == 1:
                named = [*classes.values()]
            out = {"class_at_point": "; ".join(named), **out}
        if series and inside:
            out["all_time_steps"] = series
        if not inside:
            out["note"] = f"the point is outside the collection's extent {record.bbox}"
        elif all(v is None for r in results for v in (r.get("values") or {}).values()):
            out["note"] = "no data at this point (nodata value)"
        return out

    async def _cell_statistics(
        self, collection_id: Any, point: tuple[float, float], datetime: Any, band: Any
    ) -> dict[str, Any]:
        """Statistics of a box of zero size (a small model's way of pointing): the cell under the point."""
        record = await self.collection(collection_id)
        info = self.band(record, band)
        found = await self.point(record.id, point[0], point[1], datetime)
        value = (found["results"][-1].get("values") or {}).get(info.name)
        reading = value.get("value") if isinstance(value, dict) else value
        statistics: dict[str, Any] = {"valid_pixels": 0 if reading is None else 1}
        if reading is not None:
            statistics.update({"min": reading, "max": reading, "mean": reading})
            if isinstance(value, dict) and "class" in value:
                statistics["majority"] = value["class"]
        return {
            "collection_id": record.id,
            "band": _band_json(info),
            "unit": info.unit,
            "area": {
                "type": "point",
                "lon": point[0],
                "lat": point[1],
                "note": "a box of zero size is a point: the value of the cell under it",
            },
            "time": found["time"],
            "statistics": statistics,
        }

    async def _outside_message(
        self, record: CollectionRecord, x: float, y: float, place_info: dict[str, Any] | None
    ) -> str:
        where = f"{place_info.get('name')} ({x}, {y})" if place_info else f"the point ({x}, {y})"
        covering = [
            r.id
            for r in sorted(await self.collections(), key=lambda r: r.id)
            if r.bbox and r.bbox[0] <= x <= r.bbox[2] and r.bbox[1] <= y <= r.bbox[3]
        ]
        others = ", ".join(covering) or "none: no collection has data there"
        return (
            f"{where} is outside '{record.id}' (extent {record.bbox}), so it has no value there. "
            f"Collections covering this point: {others}."
        )

    async def multi_point(
        self, collection_ids: Any, lon: Any, lat: Any, place: Any = None, token: Callable[[], str] | None = None
    ) -> dict[str, Any]:
        x, y, place_info = await self.located_point(place, lon, lat, token)
        if isinstance(collection_ids, str):
            collection_ids = [c for c in re.split(r"[,\s]+", collection_ids) if c]
        if not isinstance(collection_ids, list) or not collection_ids:
            raise ArgumentError("collection_ids", "expected a non-empty list of collection ids")
        limit = self.settings.max_point_collections
        if len(collection_ids) > limit:
            raise ArgumentError(
                "collection_ids", f"{len(collection_ids)} collections is more than the limit of {limit}"
            )
        records = [await self.collection(c, "collection_ids") for c in dict.fromkeys(collection_ids)]
        results = []
        for record in records:
            single = await self.point(record.id, x, y, outside_is_error=False)
            entry: dict[str, Any] = {"collection_id": record.id, "title": record.title, "units": single["units"]}
            first = single["results"][-1]
            entry.update({k: v for k, v in first.items() if k in {"values", "time", "inside"}})
            if "note" in single:
                entry["note"] = single["note"]
            results.append(entry)
        if all(entry.get("inside") is False for entry in results):
            raise ArgumentError(
                "place" if place_info else "lon", await self._outside_message(records[0], x, y, place_info)
            )
        head = {"place": place_info} if place_info else {}
        return {**head, "lon": x, "lat": y, "count": len(results), "results": results}

    async def timeseries(
        self,
        collection_id: Any,
        lon: Any,
        lat: Any,
        start: Any,
        end: Any,
        band: Any,
        place: Any = None,
        token: Callable[[], str] | None = None,
    ) -> dict[str, Any]:
        x, y, place_info = await self.located_point(place, lon, lat, token)
        record = await self.collection(collection_id)
        info = self.band(record, band)
        if not record.time_resolved:
            series = sorted(r.id for r in await self.collections() if r.time_resolved)
            raise ArgumentError(
                "collection_id",
                f"'{record.id}' is not a time series; time-resolved collections: {', '.join(series)}",
            )
        interval = series_interval(start, end)
        limit = self.settings.max_timeseries_items
        items = await self.items(record, interval, None, limit + 1, "start" if start else "end")
        if len(items) > limit:
            raise ArgumentError("start", f"more than {limit} time steps; narrow start/end")
        values = await self.read(reads.point_values, await self.hrefs(items), x, y)
        if not any(v.inside for v in values):
            raise ArgumentError("place" if place_info else "lon", await self._outside_message(record, x, y, place_info))
        points: list[dict[str, Any]] = [
            {
                "time": _iso(i.start),
                "end": _iso(i.end) if i.end != i.start else None,
                "value": v.values[info.index - 1] if v.inside else None,
            }
            for i, v in zip(items, values, strict=True)
        ]
        valid = [float(p["value"]) for p in points if p["value"] is not None]
        out: dict[str, Any] = {
            "collection_id": record.id,
            "band": _band_json(info),
            "unit": info.unit,
            **({"place": place_info} if place_info else {}),
            "lon": x,
            "lat": y,
            "pixel_center": next(v.pixel_center for v in values if v.inside),
            "count": len(points),
            "points": [{k: v for k, v in p.items() if v is not None or k == "value"} for p in points],
        }
        if valid:
            out["summary"] = {"min": min(valid), "max": max(valid), "mean": rasterops._round(float(np.mean(valid)))}
        else:
            out["note"] = "no data at this point in any time step"
        return out

    # -- zonal statistics and change -------------------------------------------------

    async def zonal(
        self,
        collection_id: Any,
        geometry: Any,
        datetime: Any,
        band: Any,
        token: Callable[[], str],
        place: Any = None,
        bbox: Any = None,
    ) -> dict[str, Any]:
        record = await self.collection(collection_id)
        info = self.band(record, band)
        interval = interval_for(record, datetime)
        area, place_info = await self.located_area(place, bbox, geometry, token, bbox_allowed=False)
        items, note = await self.latest_or_matching(record, interval, area.geometry.bounds, 24, area.argument)
        per_item = await self.read(reads.zonal_items, self.limits, await self.hrefs(items), area, info)
        OVERVIEW_READS.inc(sum(1 for _s, r, _f in per_item if not r["native"]))
        first_stats, resolution, inside_fraction = per_item[0]
        result: dict[str, Any] = {
            "collection_id": record.id,
            "band": _band_json(info),
            "unit": info.unit,
            **({"place": place_info} if place_info else {}),
            "area": self.area_json(area, inside_fraction=inside_fraction),
            "time": _time_json(record, items, note),
            "resolution": resolution,
            "method": "exact cell coverage fractions (exactextract) weighted by cell area",
        }
        if len(items) == 1:
            result["statistics"] = first_stats
        else:
            result["per_time_step"] = [
                {
                    "time": i.time_label(),
                    **{k: s.get(k) for k in ("mean", "min", "max", "valid_fraction", "majority") if k in s},
                }
                for i, (s, _r, _f) in zip(items, per_item, strict=True)
            ]
            means = [float(s["mean"]) for s, _r, _f in per_item if "mean" in s]
            if means:
                result["summary"] = {
                    "mean_of_means": rasterops._round(float(np.mean(means))),
                    "min": min(s["min"] for s, _r, _f in per_item if "min" in s),
                    "max": max(s["max"] for s, _r, _f in per_item if "max" in s),
                }
        return result

    async def change(
        self,
        collection_id: Any,
        geometry: Any,
        bbox: Any,
        period_a: Any,
        period_b: Any,
        band: Any,
        threshold: Any,
        token: Callable[[], str],
        place: Any = None,
    ) -> dict[str, Any]:
        record = await self.collection(collection_id)
        info = self.band(record, band)
        if not record.time_resolved:
            series = sorted(r.id for r in await self.collections() if r.time_resolved)
            raise ArgumentError(
                "collection_id",
                f"'{record.id}' has a single undated state, so there is nothing to compare; "
                f"time-resolved collections: {', '.join(series)}",
            )
        if threshold is None:
            threshold = 0.0
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not math.isfinite(threshold)
            or threshold < 0
        ):
            raise ArgumentError("threshold", "expected a finite number >= 0 (in the band's unit)")
        a = parse_interval(period_a, "period_a")
        b = parse_interval(period_b, "period_b")
        if a is None:
            raise ArgumentError("period_a", "required, e.g. '1999-01' or '1999-01/1999-03'")
        if b is None:
            raise ArgumentError("period_b", "required, e.g. '1999-07' or '1999-07/1999-09'")
        area, place_info = await self.located_area(place, bbox, geometry, token)
        limit = self.settings.max_change_items_per_period
        items_a = await self.items(record, a, area.geometry.bounds, limit, "period_a", area.argument)
        items_b = await self.items(record, b, area.geometry.bounds, limit, "period_b", area.argument)
        stats = await self.read(
            reads.change_stats,
            self.limits,
            await self.hrefs(items_a),
            await self.hrefs(items_b),
            area,
            info,
            float(threshold),
        )
        plan = stats.pop("_plan")
        if plan.factor > 1:
            OVERVIEW_READS.inc()
        summary = _change_summary(
            stats["change"], stats["statistics_a"], stats["statistics_b"], info.unit, (a.text, b.text)
        )
        return {
            "collection_id": record.id,
            **({"summary": summary} if summary else {}),
            "band": _band_json(info),
            "unit": info.unit,
            **({"place": place_info} if place_info else {}),
            "area": self.area_json(area, plan),
            "period_a": {"query": a.text, "time_steps": [i.time_label() for i in items_a]},
            "period_b": {"query": b.text, "time_steps": [i.time_label() for i in items_b]},
            "resolution": plan.resolution,
            "weighting": _weighting(plan),
            "threshold": threshold,
            **stats,
        }


def series_interval(start: Any, end: Any) -> TimeInterval | None:
    """The period from `start` to `end` of a time series (either may be open), errors naming them."""
    first = parse_interval(start, "start")
    last = parse_interval(end, "end")
    if not first and not last:
        return None
    interval = TimeInterval(
        first.start if first else None, last.end if last else None, f"{start or '..'}/{end or '..'}"
    )
    if interval.start and interval.end and interval.start > interval.end:
        raise ArgumentError("end", f"end ({end}) is before start ({start})")
    return interval


def _zero_size_box(bbox: Any) -> tuple[float, float] | None:
    """(lon, lat) of a box whose west equals east and south equals north, else None."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox):
        return None
    west, south, east, north = (float(v) for v in bbox)
    return (west, south) if west == east and south == north else None


def _series_summary(
    items: Sequence[ItemRecord], values: Sequence[rasterops.PointValue], band: BandInfo
) -> dict[str, Any] | None:
    """Lowest, highest and mean value of the first band over the time steps, with their times."""
    steps = []
    for item, value in zip(items, values, strict=True):
        reading = value.values[band.index - 1] if value.inside else None
        if reading is not None:
            steps.append((item.time_label(), float(reading)))
    if len(steps) < 2 or band.classes:
        return None
    low = min(steps, key=lambda s: s[1])
    high = max(steps, key=lambda s: s[1])
    return {
        "band": band.name,
        "count": len(steps),
        "min": {"value": low[1], "time": low[0]},
        "max": {"value": high[1], "time": high[0]},
        "mean": rasterops._round(float(np.mean([v for _, v in steps]))),
    }


def _change_summary(
    change: dict[str, Any], a: dict[str, Any], b: dict[str, Any], unit: str | None, periods: tuple[str, str]
) -> str:
    """The comparison in one sentence, sign and unit written out: a small model copies a sentence
    more faithfully than it picks the right key of a nested result."""
    mean_a, mean_b, diff = a.get("mean"), b.get("mean"), change.get("mean")
    if not isinstance(diff, (int, float)) or not all(isinstance(v, (int, float)) for v in (mean_a, mean_b)):
        return ""
    u = f" {unit}" if unit else ""
    text = (
        f"mean {mean_a}{u} in {periods[0]}, {mean_b}{u} in {periods[1]}: a change of "
        f"{'+' if diff > 0 else ''}{diff}{u} ({'rose' if diff > 0 else 'fell' if diff < 0 else 'unchanged'})"
    )
    percent = change.get("mean_change_percent")
    if isinstance(percent, (int, float)):
        text += f", {'+' if percent > 0 else ''}{percent} % of the {periods[0]} mean"
    return text


def point_circle(lon: float, lat: float, km: float) -> BaseGeometry:
    """A circle of `km` around a point, as a lon/lat polygon (degrees scaled by latitude; within 0.5 %)."""
    dy = km / 110.574
    dx = km / (111.320 * max(math.cos(math.radians(lat)), 0.01))
    unit = Point(0.0, 0.0).buffer(1.0, quad_segs=16)
    circle = affinity.affine_transform(unit, [dx, 0.0, 0.0, dy, lon, lat])
    return circle.intersection(box(-180.0, -90.0, 180.0, 90.0))


def _time_json(record: CollectionRecord, items: Sequence[ItemRecord], note: str) -> dict[str, Any]:
    out: dict[str, Any] = {"note": note}
    if not record.time_resolved:
        # Item dates of undated collections are file timestamps, not acquisition times.
        return out
    labels = [i.time_label() for i in items]
    out["time_steps"] = labels if len(labels) <= 12 else [*labels[:6], "...", *labels[-6:]]
    out["items"] = len(items)
    return out


def _weighting(plan: rasterops.ReadPlan) -> str:
    if plan.geographic:
        return "area-weighted (cos latitude) on a geographic grid; pixel centres inside the area"
    return "equal-area pixels of a projected grid; pixel centres inside the area"


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
