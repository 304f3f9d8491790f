"""`place` arguments the orchestrator settles before a call.

- "selection" / "drawn area" (in any tool's `place`) become the user's selected feature or drawn geometry
  from the run's spatial context: a vector-tools feature as its ref "<dataset>/<id>", any other shape as
  `geometry` (areas), `lon`/`lat` (points) or `bbox`, whichever the tool takes. No selection or drawing is
  a clear tool error, never a guess.
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
- The place name of a map tool (zoom_to_location, visualize_collection) is resolved by vector-tools'
  `resolve_place` over MCP (with the run's headers, like any tool call): the browser gets plain
  coordinates, so it needs no resolver of its own.
  An ambiguous or unknown name is reported to the model as the tool's error, with the candidates.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..grounding import extract_numbers
from ..llm.types import ToolCall
from .pool import ToolPool, ToolUnavailable
from .registry import RegisteredTool

if TYPE_CHECKING:
    from ..run_context import SpatialInput
    from .catalog import ToolCatalog

SELECTION_NAMES = frozenset({"selection", "selected feature", "the selection"})
DRAWN_NAMES = frozenset({"drawn area", "drawing", "drawn geometry", "the drawn area"})
RESOLVE_TOOL = "resolve_place"
ZOOM_TOOL = "zoom_to_location"
# Map tools whose place becomes the view: lat, lon and zoom for the browser.
VIEW_TOOLS = frozenset({ZOOM_TOOL, "visualize_collection"})
POINT_ZOOM = 10
AREA_TYPES = frozenset({"Polygon", "MultiPolygon"})
# What to do instead, in the error: the model asked for a selection it made up, not the user.
NO_USER_SHAPE = "name the place instead (e.g. place: 'Luxembourg'), or leave place out"
# Calls that a question about one typed point turns into a point query.
POINT_TOOL = "query_raster_point"
POINT_ASKED_TOOLS = frozenset({"get_raster_statistics", "compute_zonal_stats", "get_raster_info"})
LOCATION_KEYS = ("place", "lon", "lat", "bbox", "geometry")
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LON_LAT = re.compile(
    rf"\blon(?:gitude)?\s*[:=]?\s*{_NUMBER}\s*,?\s*(?:and\s+)?lat(?:itude)?\s*[:=]?\s*{_NUMBER}", re.I
)
_LAT_LON = re.compile(
    rf"\blat(?:itude)?\s*[:=]?\s*{_NUMBER}\s*,?\s*(?:and\s+)?lon(?:gitude)?\s*[:=]?\s*{_NUMBER}", re.I
)
_AREA_WORDS = re.compile(r"\b(?:box|bbox|area|region|polygon|within|inside|around|between)\b", re.I)
# The area statistic a point query over a typed box becomes.
AREA_TOOL = "get_raster_statistics"
# Area statistics that a city's place turns into its series, and the tool that gives the series.
AREA_STAT_TOOLS = frozenset({"get_raster_statistics", "compute_zonal_stats"})
SERIES_TOOL = "get_timeseries"
_YEAR_ONLY = re.compile(r"^\d{4}$")
# Arguments that locate a call by numbers.
COORDINATE_KEYS = ("lon", "lat", "bbox", "points")


class PlaceError(ValueError):
    """The place argument cannot be settled; the message names the argument and what to do."""


def _bounds(geometry: Mapping[str, Any]) -> tuple[float, float, float, float] | None:
    """[west, south, east, north] of a GeoJSON geometry's coordinates (None if it has none)."""
    xs: list[float] = []
    ys: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, list) and len(value) >= 2 and all(isinstance(v, int | float) for v in value[:2]):
            xs.append(float(value[0]))
            ys.append(float(value[1]))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(geometry.get("coordinates"))
    for member in geometry.get("geometries") or []:
        if isinstance(member, Mapping):
            walk(member.get("coordinates"))
    if not xs:
        return None
    return min(xs), min(ys), max(xs), max(ys)


def zoom_for(bounds: Sequence[float]) -> int:
    """A map zoom that fits the box: each level halves the span shown (360 degrees at zoom 0)."""
    span = max(bounds[2] - bounds[0], bounds[3] - bounds[1])
    if span <= 0:
        return POINT_ZOOM
    return max(1, min(POINT_ZOOM + 2, math.floor(math.log2(360 / span))))


def _centre(bounds: Sequence[float]) -> tuple[float, float]:
    """(lat, lon) of a box's centre, rounded to about a metre."""
    return round((bounds[1] + bounds[3]) / 2, 5), round((bounds[0] + bounds[2]) / 2, 5)


def _user_shape(name: str, spatial: SpatialInput) -> tuple[dict[str, Any], str | None, str]:
    """The user's geometry for a fixed name, the vector ref if it is a vector-tools feature, and a label."""
    if name in SELECTION_NAMES:
        feature = spatial.selected_feature
        if not feature:
            raise PlaceError(f"place: 'selection' was given but nothing is selected on the user's map; {NO_USER_SHAPE}")
        geometry = feature.get("geometry")
        if not isinstance(geometry, dict) or not geometry:
            raise PlaceError("place: the selected feature has no geometry")
        properties = feature.get("properties") or {}
        dataset, ident = properties.get("dataset"), feature.get("id", properties.get("id"))
        if isinstance(ident, float) and ident.is_integer():
            ident = int(ident)  # the request's Struct turns integer ids into floats
        ref = f"{dataset}/{ident}" if isinstance(dataset, str) and isinstance(ident, str | int) else None
        label = str(properties.get("name") or "the selected feature")
        return geometry, ref, label
    drawn = spatial.drawn_geometry
    if not drawn:
        raise PlaceError(f"place: 'drawn area' was given but the user has drawn nothing on the map; {NO_USER_SHAPE}")
    return drawn, None, "the drawn area"


def _user_place_arguments(
    tool: RegisteredTool, arguments: dict[str, Any], name: str, spatial: SpatialInput
) -> dict[str, Any]:
    geometry, ref, label = _user_shape(name, spatial)
    properties = tool.input_schema.get("properties") or {}
    rest = {key: value for key, value in arguments.items() if key != "place"}
    bounds = _bounds(geometry)
    if bounds is None:
        raise PlaceError(f"place: {label} has no coordinates")
    kind = str(geometry.get("type"))
    if tool.name in VIEW_TOOLS:
        lat, lon = _centre(bounds)
        return {**rest, "place": label, "lat": lat, "lon": lon, "zoom": arguments.get("zoom", zoom_for(bounds))}
    if ref is not None and tool.kind == "mcp":
        return {**rest, "place": ref}
    if kind in AREA_TYPES and "geometry" in properties:
        return {**rest, "geometry": geometry}
    if kind == "Point" and "lon" in properties and "lat" in properties:
        return {**rest, "lon": bounds[0], "lat": bounds[1]}
    if "bbox" in properties and kind != "Point":
        return {**rest, "bbox": list(bounds)}
    needs = "a point (a city or a marker)" if "lon" in properties else "an area (a polygon)"
    raise PlaceError(f"place: {label} is a {kind}, but {tool.name} needs {needs}")


def _resolver(pool: ToolPool) -> RegisteredTool | None:
    for tool in pool.tools():
        if (tool.remote_name or tool.name) == RESOLVE_TOOL:
            return tool
    return None


async def resolve_place(place: str, pool: ToolPool, headers: Callable[[], Mapping[str, str]]) -> dict[str, Any]:
    """vector-tools' answer for a place name: name, ref, and a `point` or a `bbox`."""
    tool = _resolver(pool)
    if tool is None:
        raise PlaceError("place: place names cannot be resolved now (vector-tools is not available); give lat and lon")
    try:
        outcome = await pool.call(tool, {"place": place}, headers())
    except ToolUnavailable as error:
        raise PlaceError(f"place: could not resolve {place!r}: {error.message}; give lat and lon") from None
    if outcome.is_error:
        raise PlaceError(outcome.text)
    try:
        answer = json.loads(outcome.text)
    except ValueError:
        raise PlaceError(f"place: vector-tools gave no readable answer for {place!r}") from None
    if answer.get("status") == "ambiguous":
        raise PlaceError(f"place: {answer.get('message')}")
    resolved: dict[str, Any] = answer.get("place") or {}
    return resolved


async def _view_arguments(
    arguments: dict[str, Any], place: str, pool: ToolPool, headers: Callable[[], Mapping[str, str]]
) -> dict[str, Any]:
    resolved = await resolve_place(place, pool, headers)
    point, box = resolved.get("point"), resolved.get("bbox")
    if isinstance(point, list) and len(point) == 2:
        lat, lon, zoom = round(point[1], 5), round(point[0], 5), POINT_ZOOM
    elif isinstance(box, list) and len(box) == 4:
        (lat, lon), zoom = _centre(box), zoom_for(box)
    else:
        raise PlaceError(f"place: vector-tools resolved {place!r} without a point or box")
    ignored = " (lat/lon ignored)" if "lat" in arguments or "lon" in arguments else ""
    label = f"{resolved.get('name', place)} ({resolved.get('ref', '')}){ignored}"
    return {**arguments, "place": label, "lat": lat, "lon": lon, "zoom": arguments.get("zoom", zoom)}


def _coordinates(arguments: Mapping[str, Any]) -> list[float]:
    numbers: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            numbers.append(float(value))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for key in COORDINATE_KEYS:
        walk(arguments.get(key))
    geometry = arguments.get("geometry")
    if isinstance(geometry, Mapping):
        walk(geometry.get("coordinates"))
    return numbers


def _typed_by_user(numbers: list[float], question: str) -> bool:
    """Every number is one the user wrote (signs aside: "80 W" may come as -80)."""
    written = {abs(found.value) for found in extract_numbers(question)}
    return bool(numbers) and all(any(math.isclose(abs(n), w, abs_tol=1e-9) for w in written) for n in numbers)


def _named_only_in_collection_id(name: str, arguments: Mapping[str, Any], question: str) -> bool:
    """The place is part of the call's collection id, and the question names it only there."""
    ids = arguments.get("collection_ids") or [arguments.get("collection_id")]
    words = re.escape(name).replace(r"\ ", "[\\s_-]+")
    in_id = re.compile(rf"(?<![a-z0-9]){words}(?![a-z0-9])")
    if not name or not any(isinstance(c, str) and in_id.search(c.lower()) for c in ids):
        return False
    standalone = re.compile(rf"(?<![\w-]){words}(?![\w-])")
    return standalone.search(question.lower()) is None


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


async def _city_series(
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


def typed_point(question: str) -> tuple[float, float] | None:
    """The one (lon, lat) a question gives in words ("longitude 0, latitude 0"), when it names no area."""
    if _AREA_WORDS.search(question):
        return None
    points = [(float(lon), float(lat)) for lon, lat in _LON_LAT.findall(question)]
    points += [(float(lon), float(lat)) for lat, lon in _LAT_LON.findall(question)]
    if len(set(points)) != 1:
        return None
    lon, lat = points[0]
    return (lon, lat) if -180 <= lon <= 180 and -90 <= lat <= 90 else None


def _point_query(call: ToolCall, catalog: ToolCatalog, question: str) -> ToolCall | None:
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


def _area_query(call: ToolCall, catalog: ToolCatalog, question: str) -> ToolCall | None:
    """A point query with no point but a box the user typed, as get_raster_statistics over the box."""
    if call.name != POINT_TOOL or catalog.get(AREA_TOOL) is None:
        return None
    lon, lat = call.arguments.get("lon"), call.arguments.get("lat")
    if isinstance(lon, int | float) or isinstance(lat, int | float):
        return None
    collection = call.arguments.get("collection_id")
    box = next(filter(None, (_box(call.arguments.get(key)) for key in ("bbox", "place", "geometry"))), None)
    if not isinstance(collection, str) or box is None or not _typed_by_user(box, question):
        return None
    arguments: dict[str, Any] = {"collection_id": collection, "bbox": box}
    if isinstance(call.arguments.get("datetime"), str):
        arguments["datetime"] = call.arguments["datetime"]
    return ToolCall(call.id, AREA_TOOL, arguments)


def _box(value: Any) -> list[float] | None:
    """Four numbers west, south, east, north of a valid lon/lat box, as a list or its JSON text."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list) or len(value) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    west, south, east, north = (float(v) for v in value)
    if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
        return None
    return [west, south, east, north]


# What the model writes as a place when the question's place is the box the user typed.
_GENERIC_AREAS = frozenset(
    {"box", "the box", "bbox", "bounding box", "area", "the area", "region", "rectangle", "polygon", "extent"}
)


def typed_box(question: str) -> list[float] | None:
    """The first four numbers in a row the question writes that make a lon/lat box (west, south, east, north)."""
    numbers = [found.value for found in extract_numbers(question)]
    return next(filter(None, (_box(numbers[i : i + 4]) for i in range(len(numbers) - 3))), None)


def _generic_place_as_box(tool: RegisteredTool, call: ToolCall, question: str) -> ToolCall | None:
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
    return _box_as_area(tool, ToolCall(call.id, call.name, {**arguments, "place": box}))


def _box_as_area(tool: RegisteredTool, call: ToolCall) -> ToolCall | None:
    """The call with a box given as its place or geometry moved to `bbox` (or a polygon), else None."""
    boxes = {key: _box(call.arguments.get(key)) for key in ("place", "geometry")}
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


def _user_shape_missing(name: str, spatial: SpatialInput) -> bool:
    if name in SELECTION_NAMES:
        return not spatial.selected_feature
    return name in DRAWN_NAMES and not spatial.drawn_geometry


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
    reshaped = _point_query(call, catalog, question) or _area_query(call, catalog, question)
    reshaped = reshaped or _generic_place_as_box(tool, call, question) or _box_as_area(tool, call)
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
            if key != "place" and (key != "bbox" or _typed_by_user(_coordinates({key: value}), question))
        }
        return ToolCall(call.id, call.name, arguments)
    coordinates = _coordinates(call.arguments)
    if coordinates and (_typed_by_user(coordinates, question) or _user_shape_missing(name, spatial)):
        return ToolCall(call.id, call.name, {key: value for key, value in call.arguments.items() if key != "place"})
    try:
        if name in SELECTION_NAMES or name in DRAWN_NAMES:
            arguments = _user_place_arguments(tool, call.arguments, name, spatial)
        elif tool.name in VIEW_TOOLS:
            arguments = await _view_arguments(call.arguments, place, pool, headers)
        else:
            # A name or ref: the tool's server resolves it.
            return await _city_series(call, place, catalog, pool, headers, time_resolved) or call
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
