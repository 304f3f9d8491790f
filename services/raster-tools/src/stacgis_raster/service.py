"""The raster operations behind the MCP tools, independent of the MCP layer: collections and their
items, reads in worker processes (`reads`, `rasterops`), and the tools built on them. Places and
areas are read in `places`, band and time arguments in `selection`, results shaped in `results`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import numpy as np
import rasterio

from stacgis_common.arguments import ArgumentError
from stacgis_raster import rasterops, reads
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import CatalogSource, CollectionRecord, ItemRecord, search_records
from stacgis_raster.features import FeatureResolver
from stacgis_raster.metrics import OVERVIEW_READS
from stacgis_raster.places import PlaceArguments
from stacgis_raster.reads import ReadLimits
from stacgis_raster.results import (
    area_json,
    band_json,
    change_summary,
    iso,
    point_json,
    series_summary,
    time_json,
    weighting,
)
from stacgis_raster.selection import interval_for, select_band, series_interval, zero_size_box
from stacgis_raster.settings import RasterSettings
from stacgis_raster.signing import Signer
from stacgis_raster.validation import BBox, TimeInterval, boxes_overlap, parse_bbox, parse_interval
from stacgis_raster.workers import ReadPool

T = TypeVar("T")


class RasterService(PlaceArguments):
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
        records = await self.collections()
        hits = [{**r.summary(), "score": round(s, 2)} for s, r in search_records(records, query, limit)]
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
        point = zero_size_box(bbox) if geometry is None else None
        if point is not None:
            return await self._cell_statistics(collection_id, point, datetime, band)
        record = await self.collection(collection_id)
        info = select_band(record, band)
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
            "band": band_json(info),
            "unit": info.unit,
            "area": area_json(area, plan),
            "time": time_json(record, items, note),
            "resolution": plan.resolution,
            "weighting": weighting(plan),
            "statistics": stats,
        }
        if len(items) > 1:
            result["composite"] = f"per-pixel mean of {len(items)} time steps"
        return result

    # Scene tools shape their areas as these do.
    area_json = staticmethod(area_json)

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
            series = series_summary(items, values, record.bands[0]) if record.bands else None
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
        return point_json(record, items, values, x, y, place_info, note, series)

    async def _cell_statistics(
        self, collection_id: Any, point: tuple[float, float], datetime: Any, band: Any
    ) -> dict[str, Any]:
        """Statistics of a box of zero size (a small model's way of pointing): the cell under the point."""
        record = await self.collection(collection_id)
        info = select_band(record, band)
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
            "band": band_json(info),
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
        info = select_band(record, band)
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
                "time": iso(i.start),
                "end": iso(i.end) if i.end != i.start else None,
                "value": v.values[info.index - 1] if v.inside else None,
            }
            for i, v in zip(items, values, strict=True)
        ]
        valid = [float(p["value"]) for p in points if p["value"] is not None]
        out: dict[str, Any] = {
            "collection_id": record.id,
            "band": band_json(info),
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
        info = select_band(record, band)
        interval = interval_for(record, datetime)
        area, place_info = await self.located_area(place, bbox, geometry, token, bbox_allowed=False)
        items, note = await self.latest_or_matching(record, interval, area.geometry.bounds, 24, area.argument)
        per_item = await self.read(reads.zonal_items, self.limits, await self.hrefs(items), area, info)
        OVERVIEW_READS.inc(sum(1 for _s, r, _f in per_item if not r["native"]))
        first_stats, resolution, inside_fraction = per_item[0]
        result: dict[str, Any] = {
            "collection_id": record.id,
            "band": band_json(info),
            "unit": info.unit,
            **({"place": place_info} if place_info else {}),
            "area": area_json(area, inside_fraction=inside_fraction),
            "time": time_json(record, items, note),
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
        info = select_band(record, band)
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
        summary = change_summary(
            stats["change"], stats["statistics_a"], stats["statistics_b"], info.unit, (a.text, b.text)
        )
        return {
            "collection_id": record.id,
            **({"summary": summary} if summary else {}),
            "band": band_json(info),
            "unit": info.unit,
            **({"place": place_info} if place_info else {}),
            "area": area_json(area, plan),
            "period_a": {"query": a.text, "time_steps": [i.time_label() for i in items_a]},
            "period_b": {"query": b.text, "time_steps": [i.time_label() for i in items_b]},
            "resolution": plan.resolution,
            "weighting": weighting(plan),
            "threshold": threshold,
            **stats,
        }
