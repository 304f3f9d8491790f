"""The raster operations behind the MCP tools, independent of the MCP layer: collections and their
items, reads in worker processes (`reads`, `rasterops`), and the tools built on them. Places and
areas are read in `places`, band and time arguments in `selection`, results shaped in `results`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from stacgis_common.arguments import ArgumentError
from stacgis_raster import rasterops, reads, results
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import CatalogSource
from stacgis_raster.catalog_search import search_records
from stacgis_raster.errors import outside_collection
from stacgis_raster.features import FeatureResolver
from stacgis_raster.metrics import OVERVIEW_READS
from stacgis_raster.places import PlaceArguments
from stacgis_raster.reads import ReadLimits
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.selection import interval_for, select_band
from stacgis_raster.settings import RasterSettings
from stacgis_raster.signing import Signer
from stacgis_raster.tool_args import (
    AreaArg,
    Band,
    BoxArea,
    LonLat,
    Period,
    PlaceName,
    PointArg,
    SeriesPeriod,
    ZeroSizeBox,
)
from stacgis_raster.validation import BBox, TimeInterval, boxes_overlap, parse_bbox
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
        call = partial(rasterops.in_gdal_env, self._gdal_env, fn, *args)
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
        self, collection_id: str, argument: str = "collection_id", *, scenes: bool = False
    ) -> CollectionRecord:
        """A collection by id (checked and stripped at the edge: `tool_args.collection_id`); a scene
        collection only where `scenes` says the caller reads one (the single-asset tools would read one
        band of one item of it)."""
        record = await self.run(self.source.collection, collection_id, argument)
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

    async def list_collections(self, bbox: BBox | None, interval: TimeInterval | None) -> dict[str, Any]:
        return results.collection_listing(await self.collections(), bbox, interval)

    async def catalogue(self) -> dict[str, Any]:
        """Every collection for the `collections://list` resource."""
        return results.catalogue_json(await self.collections())

    async def search_collections(self, query: str, limit: int = 10) -> dict[str, Any]:
        records = await self.collections()
        return results.search_json(query, records, search_records(records, query, limit))

    async def info(self, collection_id: str) -> dict[str, Any]:
        return results.collection_details(await self.collection(collection_id, scenes=True))

    # -- statistics --------------------------------------------------------------------

    async def statistics(
        self,
        collection_id: str,
        where: AreaArg | None,
        period: Period | None,
        band: Band,
        token: Callable[[], str],
    ) -> dict[str, Any]:
        if isinstance(where, PlaceName):
            # A named place is summarised over its real boundary with exact, area-weighted cell coverage.
            return await self.zonal(collection_id, where, period, band, token)
        if isinstance(where, ZeroSizeBox):
            return await self._cell_statistics(collection_id, where, period, band, token)
        record = await self.collection(collection_id)
        info = select_band(record, band)
        interval = interval_for(record, period)
        if where is None and record.bbox is not None:
            where = BoxArea(parse_bbox(record.bbox))  # no area named: the whole collection
        area = await self.area(where, token)  # a place was summarised by `zonal` above
        items, note = await self.latest_or_matching(
            record, interval, area.geometry.bounds, self.settings.max_change_items_per_period, area.argument
        )
        hrefs = await self.hrefs(items)
        stats, plan = await self.read(reads.composite_stats, self.limits, hrefs, area, info)
        if plan.factor > 1:
            OVERVIEW_READS.inc()
        return results.statistics_json(record, info, area, plan, items, note, stats)

    # -- points and time series ------------------------------------------------------

    async def point(
        self,
        collection_id: str,
        where: PointArg,
        token: Callable[[], str],
        period: Period | None = None,
        outside_is_error: bool = True,
    ) -> dict[str, Any]:
        x, y, place_info = await self.located_point(where, token)
        record = await self.collection(collection_id)
        interval = interval_for(record, period)
        series: dict[str, Any] | None = None
        if record.time_resolved and interval is None:
            # No date asked for: the latest step is the value, and every step is summarised, so
            # "the warmest month of 1999 here" is answered whichever point tool was chosen.
            items = await self.items(record, None, None, self.settings.max_timeseries_items)
            values = await self.read(reads.point_values, await self.hrefs(items), x, y)
            series = results.series_summary(items, values, record.bands[0]) if record.bands else None
            items, values = items[-1:], values[-1:]
            note = f"latest time step used ({items[0].time_label()}); pass datetime to choose"
            if series:
                note += f"; all {series['count']} time steps are summarised in all_time_steps"
        else:
            items, note = await self.latest_or_matching(record, interval, None, 48)
            values = await self.read(reads.point_values, await self.hrefs(items), x, y)
        if outside_is_error and not any(v.inside for v in values):
            # An error, not a result with "inside": false: a small model reads a result as an answer.
            raise outside_collection(record, x, y, place_info, await self.collections())
        return results.point_json(record, items, values, x, y, place_info, note, series)

    async def _cell_statistics(
        self, collection_id: str, corner: ZeroSizeBox, period: Period | None, band: Band, token: Callable[[], str]
    ) -> dict[str, Any]:
        """Statistics of a box of zero size (a small model's way of pointing): the cell under the point."""
        record = await self.collection(collection_id)
        info = select_band(record, band)
        found = await self.point(record.id, corner.lon_lat(), token, period)
        return results.cell_statistics_json(record, info, (corner.corners[0], corner.corners[1]), found)

    async def multi_point(self, collection_ids: list[str], where: PointArg, token: Callable[[], str]) -> dict[str, Any]:
        x, y, place_info = await self.located_point(where, token)
        records = [await self.collection(c, "collection_ids") for c in collection_ids]
        entries = [
            results.multi_point_entry(record, await self.point(record.id, LonLat(x, y), token, outside_is_error=False))
            for record in records
        ]
        if all(entry.get("inside") is False for entry in entries):
            raise outside_collection(records[0], x, y, place_info, await self.collections(), hint=False)
        head = {"place": place_info} if place_info else {}
        return {**head, "lon": x, "lat": y, "count": len(entries), "results": entries}

    async def timeseries(
        self,
        collection_id: str,
        where: PointArg,
        series: SeriesPeriod | None,
        band: Band,
        token: Callable[[], str],
    ) -> dict[str, Any]:
        x, y, place_info = await self.located_point(where, token)
        record = await self.collection(collection_id)
        info = select_band(record, band)
        if not record.time_resolved:
            dated = sorted(r.id for r in await self.collections() if r.time_resolved)
            raise ArgumentError(
                "collection_id",
                f"'{record.id}' is not a time series; time-resolved collections: {', '.join(dated)}",
            )
        interval = series.interval if series is not None else None
        limit = self.settings.max_timeseries_items
        items = await self.items(record, interval, None, limit + 1, series.blamed if series is not None else "end")
        if len(items) > limit:
            raise ArgumentError("start", f"more than {limit} time steps; narrow start/end")
        values = await self.read(reads.point_values, await self.hrefs(items), x, y)
        if not any(v.inside for v in values):
            raise outside_collection(record, x, y, place_info, await self.collections())
        return results.timeseries_json(record, info, place_info, x, y, items, values)

    # -- zonal statistics and change -------------------------------------------------

    async def zonal(
        self,
        collection_id: str,
        where: AreaArg | None,
        period: Period | None,
        band: Band,
        token: Callable[[], str],
    ) -> dict[str, Any]:
        record = await self.collection(collection_id)
        info = select_band(record, band)
        interval = interval_for(record, period)
        area, place_info = await self.located_area(where, token, bbox_allowed=False)
        items, note = await self.latest_or_matching(record, interval, area.geometry.bounds, 24, area.argument)
        per_item = await self.read(reads.zonal_items, self.limits, await self.hrefs(items), area, info)
        OVERVIEW_READS.inc(sum(1 for _s, r, _f in per_item if not r["native"]))
        return results.zonal_json(record, info, place_info, area, items, note, per_item)

    async def change(
        self,
        collection_id: str,
        where: AreaArg | None,
        periods: tuple[TimeInterval, TimeInterval],
        band: Band,
        threshold: float,
        token: Callable[[], str],
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
        a, b = periods
        area, place_info = await self.located_area(where, token)
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
        return results.change_json(record, info, place_info, area, plan, (a, items_a), (b, items_b), threshold, stats)
