"""The scene tools: item search, and statistics and time series over mosaics of many items.

Built on `RasterService` for everything shared with the other tools (collections, places and
areas, the read workers, the asset allow-list). Property filters and sorting run here, over at
most `RASTER_SCENE_MAX_ITEMS` items from the source, so they work against any STAC API whether
or not it implements the filter and sort extensions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from shapely.geometry import box

from stacgis_common.arguments import ArgumentError
from stacgis_raster import expressions, scene_reads
from stacgis_raster.reads import Area
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.scene_reads import Composite
from stacgis_raster.scene_results import (
    item_search_json,
    scene_head,
    scene_point_json,
    scene_point_results,
    scene_statistics_json,
    scene_timeseries_json,
)
from stacgis_raster.selection import STATISTIC_WORDS, interval_for, select_band
from stacgis_raster.service import RasterService
from stacgis_raster.tool_args import AreaArg, Band, BoxArea, Period, PlaceName, PointArg, SortOrder
from stacgis_raster.validation import TimeInterval, parse_bbox


def _sort_key(sortby: SortOrder) -> Callable[[ItemRecord], tuple[float, str]]:
    field = sortby.lstrip("-")

    def key(item: ItemRecord) -> tuple[float, str]:
        if field == "cloud_cover":
            return (item.cloud_cover if item.cloud_cover is not None else 101.0, item.id)
        return ((item.start or dt.datetime.min.replace(tzinfo=dt.UTC)).timestamp(), item.id)

    return key


def scene_items(
    asset_href: Callable[[str, str], str],
    record: CollectionRecord,
    items: Sequence[ItemRecord],
    assets: Sequence[str],
    cloud_mask: bool = True,
) -> list[scene_reads.SceneItem]:
    """What a read worker needs of each item: the checked (and signed) hrefs of the assets the
    expression reads. Blocking (`asset_href` may fetch a token): run it through `RasterService.run`."""
    scaling = {
        key: (band.scale if band.scale is not None else 1.0, band.offset or 0.0)
        for key in assets
        if (band := record.asset_bands[key]).scale is not None or band.offset is not None
    }
    out = []
    for item in items:
        missing = [key for key in assets if key not in item.assets]
        if missing:
            raise ArgumentError("expression", f"item '{item.id}' has no asset {', '.join(missing)}")
        hrefs = {key: asset_href(item.assets[key], item.collection_id) for key in assets}
        mask = None
        if cloud_mask and record.cloud_mask is not None:
            key, values = record.cloud_mask
            mask_href = item.mask_href or item.assets.get(key)
            if mask_href is not None:
                mask = (asset_href(mask_href, item.collection_id), values)
        out.append(
            scene_reads.SceneItem(
                item.id,
                item.time_label() or "",
                hrefs,
                item.cloud_cover,
                scaling,
                item.cube,
                item.band,
                mask,
                item.bbox if item.bbox and len(item.bbox) == 4 else None,
            )
        )
    return out


class SceneService:
    def __init__(self, raster: RasterService) -> None:
        self.raster = raster
        self.max_items = raster.settings.scene_max_items

    async def _scene_collection(self, collection_id: str) -> CollectionRecord:
        record = await self.raster.collection(collection_id, scenes=True)
        if not record.scenes:
            raise ArgumentError(
                "collection_id",
                f"'{record.id}' is not a scene collection (one asset per band); use get_raster_statistics for it. "
                "Scene collections: " + ", ".join(sorted(r.id for r in await self.raster.collections() if r.scenes)),
            )
        return record

    async def _matching(
        self, record: CollectionRecord, area: Area | None, period: Period | None, cloud: float | None
    ) -> tuple[list[ItemRecord], bool, TimeInterval | None]:
        """Items of `record` in the area and period under the cloud limit, and whether the cap cut the list."""
        interval = interval_for(record, period)
        bounds = area.geometry.bounds if area is not None else None
        found = await self.raster.run(self.raster.source.items, record, interval, bounds, self.max_items + 1)
        capped = len(found) > self.max_items
        found = found[: self.max_items]
        if area is not None:
            # The source matched bounding boxes; keep items whose box meets the area itself.
            found = [i for i in found if i.bbox is None or box(*i.bbox).intersects(area.geometry)]
        if cloud is not None:
            if found and all(i.cloud_cover is None for i in found):
                # Gridded data (climate tiles, a cube) has no clouds to count: every item would drop out.
                raise ArgumentError(
                    "max_cloud_cover", f"the items of '{record.id}' carry no cloud cover (eo:cloud_cover); leave it out"
                )
            found = [i for i in found if i.cloud_cover is not None and i.cloud_cover <= cloud]
        return found, capped, interval

    async def _area(
        self, where: AreaArg | None, token: Callable[[], str], record: CollectionRecord
    ) -> tuple[Area, dict[str, Any] | None]:
        if where is None:
            if record.bbox is None:
                raise ArgumentError("place", "give place, bbox or geometry")
            where = BoxArea(parse_bbox(record.bbox))
        return await self.raster.located_area(where, token)

    async def search(
        self,
        collection_id: str,
        token: Callable[[], str],
        *,
        where: AreaArg | None = None,
        period: Period | None = None,
        max_cloud_cover: float | None = None,
        sortby: SortOrder | None = None,
        limit: int = 10,
        page: int = 1,
    ) -> dict[str, Any]:
        record = await self._scene_collection(collection_id)
        area: Area | None = None
        place_info = None
        if where is not None:
            area, place_info = await self.raster.located_area(where, token)
        found, capped, interval = await self._matching(record, area, period, max_cloud_cover)
        if sortby:
            found.sort(key=_sort_key(sortby), reverse=sortby.startswith("-"))
        pages = max(1, -(-len(found) // limit))
        if page > pages and found:
            raise ArgumentError("page", f"there are {pages} page(s) of {limit} items")
        shown = found[(page - 1) * limit : page * limit]
        return item_search_json(
            record,
            found,
            shown,
            page=page,
            pages=pages,
            capped=capped,
            max_items=self.max_items,
            place_info=place_info,
            interval=interval,
            datetime_given=period is not None,
        )

    async def _prepared(
        self,
        collection_id: str,
        expression: str,
        where: AreaArg | None,
        period: Period | None,
        max_cloud_cover: float | None,
        token: Callable[[], str],
    ) -> tuple[CollectionRecord, expressions.Expression, Area, dict[str, Any] | None, list[ItemRecord], bool]:
        record = await self._scene_collection(collection_id)
        parsed = expressions.parse(expression, record.asset_bands, record.id)
        area, place_info = await self._area(where, token, record)
        items, capped, _ = await self._matching(record, area, period, max_cloud_cover)
        if not items:
            raise ArgumentError(
                "datetime" if period is not None else "place" if isinstance(where, PlaceName) else "bbox",
                f"no items of '{record.id}' match the area"
                + (f", period {period.text}" if period is not None else "")
                + (f" and cloud cover <= {max_cloud_cover} %" if max_cloud_cover is not None else "")
                + f"; the collection covers {record.temporal_label() or 'no stated period'}"
                + f" within {list(record.bbox or [])}",
            )
        return record, parsed, area, place_info, items, capped

    async def statistics(
        self,
        collection_id: str,
        expression: str,
        token: Callable[[], str],
        *,
        where: AreaArg | None = None,
        period: Period | None = None,
        max_cloud_cover: float | None = None,
        composite: Composite = "median",
        cloud_mask: bool = True,
    ) -> dict[str, Any]:
        single = await self.raster.collection(collection_id, scenes=True)
        if not single.scenes:
            # The mirror of `area_statistics`: a single-file collection whose band the expression names
            # ("ndvi" of landsat7-olinda-ndvi) is read by `get_raster_statistics`, said in the result.
            try:
                band = select_band(single, expression, "expression").name
            except ArgumentError:
                band = None
            if band is not None:
                result = await self.raster.statistics(single.id, where, period, band, token)
                result["read_as"] = f"get_raster_statistics of band '{band}' ({single.id} is not a scene collection)"
                return result
        record, parsed, area, place_info, items, capped = await self._prepared(
            collection_id, expression, where, period, max_cloud_cover, token
        )
        done = await self.raster.read(
            scene_reads.scene_statistics,
            self.raster.limits,
            await self.raster.run(scene_items, self.raster.asset_href, record, items, parsed.assets, cloud_mask),
            area,
            parsed.formula,
            composite,
        )
        used_mask = record.cloud_mask is not None and cloud_mask
        head = scene_head(record, parsed, area, place_info, capped, self.max_items)
        return scene_statistics_json(head, record, items, done, composite, used_mask)

    async def timeseries(
        self,
        collection_id: str,
        expression: str,
        token: Callable[[], str],
        *,
        where: AreaArg | None = None,
        period: Period | None = None,
        max_cloud_cover: float | None = None,
        cloud_mask: bool = True,
    ) -> dict[str, Any]:
        """`period` is the series' start/end as the datetime its items are searched with
        (`tool_args.series_as_period`)."""
        record, parsed, area, place_info, items, capped = await self._prepared(
            collection_id, expression, where, period, max_cloud_cover, token
        )
        read_items = await self.raster.run(
            scene_items, self.raster.asset_href, record, items, parsed.assets, cloud_mask
        )
        done = await self.raster.read(scene_reads.scene_series, self.raster.limits, read_items, area, parsed.formula)
        head = scene_head(record, parsed, area, place_info, capped, self.max_items)
        return scene_timeseries_json(head, items, done)

    async def point(
        self, collection_id: str, where: PointArg, token: Callable[[], str], *, period: Period | None = None
    ) -> dict[str, Any]:
        """`query_raster_point` for any collection: scene collections and cubes read here (every asset
        at the point, from the least cloudy item there, per date), the others by `RasterService.point`."""
        record = await self.raster.collection(collection_id, scenes=True)
        if not record.scenes:
            return await self.raster.point(collection_id, where, token, period)
        x, y, place_info = await self.raster.located_point(where, token)
        interval = interval_for(record, period)
        found = await self.raster.run(self.raster.source.items, record, interval, (x, y, x, y), self.max_items)
        if not found:
            raise ArgumentError(
                "place" if place_info else ("datetime" if interval is not None else "lon"),
                f"no item of '{record.id}' at ({x}, {y})"
                + (f" in {interval.text}" if interval else "")
                + f"; the collection covers {list(record.bbox or [])}, {record.temporal_label() or 'undated'}",
            )
        dates = sorted({i.time_label() or "" for i in found})
        if interval is None and record.time_resolved:
            dates = dates[-1:]  # no date asked for: the latest
        chosen = [i for i in found if (i.time_label() or "") in dates]
        chosen.sort(key=lambda i: (i.time_label() or "", i.cloud_cover if i.cloud_cover is not None else 0.0))
        read_items = await self.raster.run(
            scene_items, self.raster.asset_href, record, chosen, list(record.asset_bands)
        )
        sampled = await self.raster.read(scene_reads.scene_point, read_items[: self.max_items], x, y)
        results = scene_point_results(record, chosen, sampled)
        if not results:
            raise ArgumentError("place" if place_info else "lon", f"no data in '{record.id}' at ({x}, {y})")
        return scene_point_json(record, place_info, x, y, results, dated=interval is not None)

    def default_expression(self, record: CollectionRecord, band: Band) -> str:
        """What a single-file tool's `band` means for a scene collection: an asset or variable named
        (or numbered) there, else NDVI where red and near infrared exist, else the first asset."""
        keys = list(record.asset_bands)
        if isinstance(band, int) and not isinstance(band, bool) and 1 <= band <= len(keys):
            return keys[band - 1]
        if isinstance(band, str) and band.strip() and band.strip().lower() not in STATISTIC_WORDS:
            return band.strip()
        try:
            expressions.parse("ndvi", record.asset_bands, record.id)
        except ArgumentError:
            return keys[0]
        return "ndvi"

    async def area_statistics(
        self,
        collection_id: str,
        where: AreaArg | None,
        period: Period | None,
        band: Band,
        token: Callable[[], str],
    ) -> dict[str, Any]:
        """`get_raster_statistics` for any collection: a scene collection or cube is read as
        `get_scene_statistics` with the expression its `band` means (said in the result)."""
        record = await self.raster.collection(collection_id, scenes=True)
        if not record.scenes:
            return await self.raster.statistics(collection_id, where, period, band, token)
        expression = self.default_expression(record, band)
        result = await self.statistics(record.id, expression, token, where=where, period=period)
        result["read_as"] = f"get_scene_statistics with expression '{expression}' ({record.id} is a scene collection)"
        return result
