"""Calls rewritten to what the question asks, where the model picked the wrong tool or wrote the place
in the wrong argument.

- A question about one point the user typed ("at longitude -66.5, latitude 18.2"), sent to an area
  statistic or to get_raster_info with a location, runs as query_raster_point at that point: the
  model sent a 0.1 degree box beside `place: "Puerto Rico"`, or asked the collection's info.
- A point query given no point but a box the user typed ("the highest precipitation anywhere in the
  box -84, 34, -78, 36.5" sent to query_raster_point with `bbox`) runs as get_raster_statistics over
  that box: the model picked the tool by the word "point" in its own plan, the question asks about an area.
- A box written as the place or the geometry ("[-82, 25, -79, 28]", four numbers west, south, east,
  north) becomes the tool's `bbox`, or for a tool without one a `geometry` polygon of the box.
- A word for an area as the place ("box", "region") is the box the user typed: the model sent
  `place: "box"` and a made-up geometry beside it for "anywhere in the box -84, 34, -78, 36.5", and
  vector-tools found no place called "box".
- A city (a point) given to an area statistic (get_raster_statistics, compute_zonal_stats) of a
  time-resolved collection (gridded climate data) runs at the city: over several time steps as
  get_timeseries ("the highest monthly temperature of 1999 in Knoxville" needs the months at
  Knoxville, not one mean over time of a circle around it), for one month or day as
  query_raster_point (the city's cell, not a 10 km circle across neighbouring cells).
- A layer asked for by a question that asks for no data ("Show me Tokyo on the map" sent to
  visualize_collection with some collection) is a zoom to the place (`settle_view`); a layer's place
  that neither the question nor a memory names (one the model made up: "South-eastern United
  States") is left out, so the layer shows at its own extent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..llm.types import ToolCall
from .gazetteer import PlaceError, resolve_place
from .place_resolution import DRAWN_NAMES, SELECTION_NAMES, ZOOM_TOOL
from .pool import ToolPool
from .registry import RegisteredTool
from .typed_coordinates import lonlat_box, typed_box, typed_by_user, typed_point

if TYPE_CHECKING:
    from .catalog import ToolCatalog

# Calls that a question about one typed point turns into a point query.
POINT_TOOL = "query_raster_point"
POINT_ASKED_TOOLS = frozenset({"get_raster_statistics", "compute_zonal_stats", "get_raster_info"})
LOCATION_KEYS = ("place", "lon", "lat", "bbox", "geometry")
# The area statistic a point query over a typed box becomes.
AREA_TOOL = "get_raster_statistics"
# Area statistics that a city's place turns into its series, and the tool that gives the series.
AREA_STAT_TOOLS = frozenset({"get_raster_statistics", "compute_zonal_stats"})
SERIES_TOOL = "get_timeseries"
_YEAR_ONLY = re.compile(r"^\d{4}$")
# What the model writes as a place when the question's place is the box the user typed.
_GENERIC_AREAS = frozenset(
    {"box", "the box", "bbox", "bounding box", "area", "the area", "region", "rectangle", "polygon", "extent"}
)


def point_query(call: ToolCall, catalog: ToolCatalog, question: str) -> ToolCall | None:
    """An area statistic (or info with a location) for a question about one typed point, as
    query_raster_point there; None when that is not the case."""
    if call.name not in POINT_ASKED_TOOLS or catalog.get(POINT_TOOL) is None:
        return None
    if call.name == "get_raster_info" and not any(key in call.arguments for key in LOCATION_KEYS):
        return None
    collection, point = call.arguments.get("collection_id"), typed_point(question)
    if not isinstance(collection, str) or point is None:
        return None
    arguments: dict[str, Any] = {"collection_id": collection, "lon": point[0], "lat": point[1]}
    if isinstance(call.arguments.get("datetime"), str):
        arguments["datetime"] = call.arguments["datetime"]
    return ToolCall(call.id, POINT_TOOL, arguments)


def area_query(call: ToolCall, catalog: ToolCatalog, question: str) -> ToolCall | None:
    """A point query with no point but a box the user typed, as get_raster_statistics over the box."""
    if call.name != POINT_TOOL or catalog.get(AREA_TOOL) is None:
        return None
    lon, lat = call.arguments.get("lon"), call.arguments.get("lat")
    if isinstance(lon, int | float) or isinstance(lat, int | float):
        return None
    collection = call.arguments.get("collection_id")
    box = next(filter(None, (lonlat_box(call.arguments.get(key)) for key in ("bbox", "place", "geometry"))), None)
    if not isinstance(collection, str) or box is None or not typed_by_user(box, question):
        return None
    arguments: dict[str, Any] = {"collection_id": collection, "bbox": box}
    if isinstance(call.arguments.get("datetime"), str):
        arguments["datetime"] = call.arguments["datetime"]
    return ToolCall(call.id, AREA_TOOL, arguments)


def generic_place_as_box(tool: RegisteredTool, call: ToolCall, question: str) -> ToolCall | None:
    """The call with `place: "box"` (an area word) as the box the question types, else None; a
    geometry beside it that is not GeoJSON goes too."""
    place = call.arguments.get("place")
    if not isinstance(place, str) or " ".join(place.lower().split()) not in _GENERIC_AREAS:
        return None
    box = typed_box(question)
    if box is None:
        return None
    geometry = call.arguments.get("geometry")
    keep_geometry = isinstance(geometry, dict) and isinstance(geometry.get("coordinates"), list)
    arguments = {k: v for k, v in call.arguments.items() if k != "geometry" or keep_geometry}
    return box_as_area(tool, ToolCall(call.id, call.name, {**arguments, "place": box}))


def box_as_area(tool: RegisteredTool, call: ToolCall) -> ToolCall | None:
    """The call with a box given as its place or geometry moved to `bbox` (or a polygon), else None."""
    boxes = {key: lonlat_box(call.arguments.get(key)) for key in ("place", "geometry")}
    box = boxes["place"] or boxes["geometry"]
    if box is None:
        return None
    properties = tool.input_schema.get("properties") or {}
    arguments = {k: v for k, v in call.arguments.items() if boxes.get(k) is None}
    if "bbox" in properties:
        arguments["bbox"] = box
    elif "geometry" in properties:
        west, south, east, north = box
        ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
        arguments["geometry"] = {"type": "Polygon", "coordinates": [ring]}
    else:
        return None
    return ToolCall(call.id, call.name, arguments)


def _series_window(datetime: Any) -> dict[str, str] | None:
    """get_timeseries' start/end for an area statistic's datetime that spans several time steps (none,
    a year, a range); None for one month or day."""
    if datetime is None or datetime == "":
        return {}
    if not isinstance(datetime, str):
        return None
    text = datetime.strip()
    if _YEAR_ONLY.match(text):
        return {"start": f"{text}-01", "end": f"{text}-12"}
    start, sep, end = text.partition("/")
    if not sep:
        return None
    return {key: value for key, value in (("start", start), ("end", end)) if value not in ("", "..")}


async def city_series(
    call: ToolCall,
    place: str,
    catalog: ToolCatalog,
    pool: ToolPool,
    headers: Callable[[], Mapping[str, str]],
    time_resolved: Callable[[str], bool],
) -> ToolCall | None:
    """The area statistic of a city on a time-resolved collection as get_timeseries at the city, or
    query_raster_point there for one month or day (module docstring); None otherwise."""
    arguments = call.arguments
    collection = arguments.get("collection_id")
    # A bbox beside the place is the model's own (one the user typed has already removed the place).
    if call.name not in AREA_STAT_TOOLS or "geometry" in arguments:
        return None
    if not isinstance(collection, str) or not time_resolved(collection):
        return None
    window = _series_window(arguments.get("datetime"))
    tool = SERIES_TOOL if window is not None else POINT_TOOL
    if catalog.get(tool) is None:
        return None
    try:
        resolved = await resolve_place(place, pool, headers)
    except PlaceError:
        return None  # the area tool's own server reports it
    if not isinstance(resolved.get("point"), list):
        return None
    if window is None:
        return ToolCall(
            call.id, POINT_TOOL, {"collection_id": collection, "place": place, "datetime": arguments["datetime"]}
        )
    series = {"collection_id": collection, "place": place, **window}
    if arguments.get("band") is not None:
        series["band"] = arguments["band"]
    return ToolCall(call.id, SERIES_TOOL, series)


def remembered_place(place: str, memories: Sequence[str]) -> str | None:
    """What a memory says a place of the user's is ("my study area" -> "Luxembourg"), else None."""
    name = re.sub(r"^(?:my|the|our)\s+", "", " ".join(place.lower().split()))
    if not name or len(name) > 40:
        return None
    said = re.compile(rf"^(?:my|our)\s+{re.escape(name)}\s+is\s+(?:the\s+)?(?P<value>.+?)[.!]?$", re.I)
    for memory in memories:
        found = said.match(" ".join(memory.split()))
        if found:
            return found.group("value")
    return None


def _named_in(place: str, question: str) -> bool:
    """Whether the question names the place: a word of its name ("Tokyo (cities/1850147)") is one of
    the question's; a feature ref ("cities/1850147") came from a tool result and counts as named."""
    name = place.split(" (", 1)[0]
    if "/" in name:
        return True
    asked = set(re.findall(r"[a-z]{3,}", question.lower()))
    return any(word in asked for word in re.findall(r"[a-z]{3,}", name.lower()))


def settle_view(call: ToolCall, question: str, data_asked: bool, memories: Sequence[str]) -> ToolCall:
    """A visualize_collection call as the question means it (module docstring): a zoom when no data is
    asked for, without a place nobody named."""
    place = call.arguments.get("place")
    if call.name != "visualize_collection" or call.arguments_error is not None or not isinstance(place, str):
        return call
    user_shape = " ".join(place.lower().split()) in SELECTION_NAMES | DRAWN_NAMES
    named = user_shape or _named_in(place, question) or remembered_place(place, memories) is not None
    if not data_asked and named:
        return ToolCall(
            call.id, ZOOM_TOOL, {key: call.arguments[key] for key in ("place", "zoom") if key in call.arguments}
        )
    if not named:
        view = ("place", "lat", "lon", "zoom")
        return ToolCall(call.id, call.name, {key: value for key, value in call.arguments.items() if key not in view})
    return call
