"""Raster-specific errors: an upstream that failed, an unknown collection with close ids suggested,
and a point outside the collection asked with the collections that cover it. Bad arguments are
`stacgis_common.arguments.ArgumentError` and its `NotFoundError`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from stacgis_common.arguments import ArgumentError, NotFoundError, retry_with
from stacgis_raster.records import CollectionRecord


class UpstreamError(ToolError):
    """A dependency (STAC API, vector-tools, a remote asset) failed or refused."""


def unknown_collection(collection_id: str, known: Iterable[str], argument: str = "collection_id") -> NotFoundError:
    known = sorted(known)
    close = difflib.get_close_matches(collection_id, known, n=3, cutoff=0.4)
    # Also match on a shared word, e.g. "landsat" -> "landsat7-olinda".
    words = {w for w in collection_id.lower().replace("_", "-").split("-") if len(w) > 2}
    close += [k for k in known if k not in close and words & set(k.split("-"))][: 3 - len(close)]
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return NotFoundError(
        argument,
        f"no collection '{collection_id}'.{hint} Call list_raster_collections or "
        "search_raster_collections to see the available ids.",
    )


def outside_collection(
    record: CollectionRecord,
    x: float,
    y: float,
    place_info: dict[str, Any] | None,
    records: Iterable[CollectionRecord],
    hint: bool = True,
) -> ArgumentError:
    """A point outside `record`: the collections of `records` covering it, and when exactly one of them
    holds the same variable, that one as the call to make (`retry_with`). A tool that takes a list of
    collections (`hint=False`) has no single `collection_id` to call again with."""
    where = f"{place_info.get('name')} ({x}, {y})" if place_info else f"the point ({x}, {y})"
    covering = [
        r
        for r in sorted(records, key=lambda r: r.id)
        if r.bbox and r.bbox[0] <= x <= r.bbox[2] and r.bbox[1] <= y <= r.bbox[3]
    ]
    others = ", ".join(r.id for r in covering) or "none: no collection has data there"
    message = (
        f"{where} is outside '{record.id}' (extent {record.bbox}), so it has no value there. "
        f"Collections covering this point: {others}."
    )
    alike = [r for r in covering if _same_variable(r, record)]
    if hint and len(alike) == 1:
        band = record.bands[0]
        unit = f", {band.unit}" if band.unit else ""
        message += f" Of these, '{alike[0].id}' holds {band.name}{unit} like '{record.id}'. " + retry_with(
            "collection_id", alike[0].id
        )
    return ArgumentError("place" if place_info else "lon", message)


def _same_variable(candidate: CollectionRecord, asked: CollectionRecord) -> bool:
    """Another single-variable collection of the same band name and unit (one DEM for another)."""
    if candidate.id == asked.id or len(candidate.bands) != 1 or len(asked.bands) != 1:
        return False
    one, other = candidate.bands[0], asked.bands[0]
    return one.name == other.name and one.unit == other.unit
