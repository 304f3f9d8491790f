"""`place` arguments the orchestrator settles before a call (`settle_places`, and `settle_view` for
layers). The rules, each in the module that holds it:

- `place_resolution.py`: "selection" / "drawn area" become the user's selected feature or drawn
  geometry; a map tool's place name becomes plain coordinates for the browser.
- `place_rewrites.py`: calls rewritten to what the question asks (a typed point or box, a box
  written as the place, a city's series, a layer that is a zoom).
- `gazetteer.py`: place names resolved by vector-tools (`resolve_place`), and `PlaceError`.
- `typed_coordinates.py`: the points and boxes a question types.

Settled here, in `_settle`:

- Coordinates the user typed win: when a call gives both `place` and coordinates (lon/lat, bbox,
  points, a geometry's coordinates) and every coordinate is a number of the user's message, `place`
  is dropped. A small model copies "longitude -140, latitude 0" faithfully but adds a `place` it
  made up ("selection", "Puerto Rico", "103.8, 1.35"). The same when the place is the selection or
  drawn area and there is none. Otherwise a named place wins over coordinates the model typed
  itself (raster-tools says so).
- A place the question names only inside the collection id ("the highest elevation in the
  luxembourg-dem collection" called with `place: "Luxembourg"`) is dropped, with a box the model
  made up beside it: the question is about the whole collection, not the country.
- A place the user defined in a memory ("My study area is Luxembourg") is used by that name when a
  call's place is "study area" or "my study area".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..llm.types import ToolCall
from .gazetteer import PlaceError, resolve_place
from .place_resolution import (
    DRAWN_NAMES,
    SELECTION_NAMES,
    VIEW_TOOLS,
    user_place_arguments,
    user_shape_missing,
    view_arguments,
)
from .place_rewrites import (
    area_query,
    box_as_area,
    city_series,
    generic_place_as_box,
    point_query,
    remembered_place,
    settle_view,
)
from .pool import ToolPool
from .typed_coordinates import call_coordinates, typed_by_user

if TYPE_CHECKING:
    from ..run_context import SpatialInput
    from .catalog import ToolCatalog

# Imported from here by the tool step and the tests.
__all__ = ["PlaceError", "remembered_place", "resolve_place", "settle_places", "settle_view"]


def _named_only_in_collection_id(name: str, arguments: Mapping[str, Any], question: str) -> bool:
    """The place is part of the call's collection id, and the question names it only there."""
    ids = arguments.get("collection_ids") or [arguments.get("collection_id")]
    words = re.escape(name).replace(r"\ ", "[\\s_-]+")
    in_id = re.compile(rf"(?<![a-z0-9]){words}(?![a-z0-9])")
    if not name or not any(isinstance(c, str) and in_id.search(c.lower()) for c in ids):
        return False
    standalone = re.compile(rf"(?<![\w-]){words}(?![\w-])")
    return standalone.search(question.lower()) is None


async def _settle(
    call: ToolCall,
    catalog: ToolCatalog,
    spatial: SpatialInput,
    pool: ToolPool,
    headers: Callable[[], Mapping[str, str]],
    question: str,
    time_resolved: Callable[[str], bool],
    memories: Sequence[str],
) -> ToolCall:
    tool = catalog.get(call.name)
    if tool is None or call.arguments_error is not None:
        return call
    reshaped = point_query(call, catalog, question) or area_query(call, catalog, question)
    reshaped = reshaped or generic_place_as_box(tool, call, question) or box_as_area(tool, call)
    if reshaped is not None:
        return reshaped
    place = call.arguments.get("place")
    remembered = remembered_place(place, memories) if isinstance(place, str) else None
    if remembered is not None:
        place = remembered
        call = ToolCall(call.id, call.name, {**call.arguments, "place": remembered})
    if not isinstance(place, str) or "place" not in (tool.input_schema.get("properties") or {}):
        return call
    name = " ".join(place.lower().split())
    if remembered is None and _named_only_in_collection_id(name, call.arguments, question):
        arguments = {
            key: value
            for key, value in call.arguments.items()
            if key != "place" and (key != "bbox" or typed_by_user(call_coordinates({key: value}), question))
        }
        return ToolCall(call.id, call.name, arguments)
    coordinates = call_coordinates(call.arguments)
    if coordinates and (typed_by_user(coordinates, question) or user_shape_missing(name, spatial)):
        return ToolCall(call.id, call.name, {key: value for key, value in call.arguments.items() if key != "place"})
    try:
        if name in SELECTION_NAMES or name in DRAWN_NAMES:
            arguments = user_place_arguments(tool, call.arguments, name, spatial)
        elif tool.name in VIEW_TOOLS:
            arguments = await view_arguments(call.arguments, place, pool, headers)
        else:
            # A name or ref: the tool's server resolves it.
            return await city_series(call, place, catalog, pool, headers, time_resolved) or call
    except PlaceError as error:
        return ToolCall(call.id, call.name, call.arguments, arguments_error=str(error))
    return ToolCall(call.id, call.name, arguments)


async def settle_places(
    calls: list[ToolCall],
    catalog: ToolCatalog,
    spatial: SpatialInput,
    pool: ToolPool,
    headers: Callable[[], Mapping[str, str]],
    question: str,
    time_resolved: Callable[[str], bool] = lambda _collection: False,
    memories: Sequence[str] = (),
) -> list[ToolCall]:
    """The calls with their `place` arguments settled (same ids, same order); a place that cannot be
    settled turns its call into an invalid one whose error the model reads. `time_resolved` tells
    which collections have time steps (for a city's series); `memories` are the user's (places they named).
    """
    return [await _settle(call, catalog, spatial, pool, headers, question, time_resolved, memories) for call in calls]
