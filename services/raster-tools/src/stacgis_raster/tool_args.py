"""Tool arguments parsed into typed values at the tool edge, where no collection is needed to check them."""

from __future__ import annotations

from typing import Any

from stacgis_common.arguments import ArgumentError
from stacgis_raster.validation import BBox, TimeInterval, parse_bbox, parse_interval

MAX_QUERY_CHARS = 500


def listing_filter(bbox: Any, datetime: Any) -> tuple[BBox | None, TimeInterval | None]:
    """The area and period `list_raster_collections` filters by (either may be absent)."""
    return (parse_bbox(bbox) if bbox is not None else None), parse_interval(datetime)


def search_text(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ArgumentError("query", "expected a non-empty search text, e.g. 'elevation Luxembourg'")
    if len(query) > MAX_QUERY_CHARS:
        raise ArgumentError("query", f"at most {MAX_QUERY_CHARS} characters")
    return query
