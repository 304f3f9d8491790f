"""Raster-specific errors: an upstream that failed, and an unknown collection with close ids suggested.
Bad arguments are `stacgis_common.arguments.ArgumentError` and its `NotFoundError`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from mcp.server.mcpserver.exceptions import ToolError

from stacgis_common.arguments import NotFoundError


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
