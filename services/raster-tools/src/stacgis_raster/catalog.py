"""Raster collections from a STAC source: a static catalog (path or URL) or a STAC API. Records
are parsed in `stac_records`, searched by keyword in `catalog_search`.

The sources' work is blocking I/O; the service calls it from worker threads.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import pystac
from pystac.stac_io import DefaultStacIO

from stacgis_raster.assets import AssetGuard
from stacgis_raster.errors import UpstreamError, unknown_collection
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.stac_fields import iso
from stacgis_raster.stac_records import collection_record, item_records
from stacgis_raster.validation import BBox, TimeInterval, boxes_overlap


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
                f"{iso(interval.start) if interval.start else '..'}/{iso(interval.end) if interval.end else '..'}"
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
