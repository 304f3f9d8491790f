"""A `place` argument resolved to the coordinates a tool takes.

- "selection" / "drawn area" (in any tool's `place`) become the user's selected feature or drawn geometry
  from the run's spatial context: a vector-tools feature as its ref "<dataset>/<id>", any other shape as
  `geometry` (areas), `lon`/`lat` (points) or `bbox`, whichever the tool takes. No selection or drawing is
  a clear tool error, never a guess.
- The place name of a map tool (zoom_to_location, visualize_collection) is resolved by vector-tools
  (`gazetteer.resolve_place`): the browser gets plain coordinates, so it needs no resolver of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stacgis_common.geojson import positions

from .gazetteer import PlaceError, resolve_place
from .pool import ToolPool
from .registry import RegisteredTool

if TYPE_CHECKING:
    from ..run_context import SpatialInput

SELECTION_NAMES = frozenset({"selection", "selected feature", "the selection"})
DRAWN_NAMES = frozenset({"drawn area", "drawing", "drawn geometry", "the drawn area"})
ZOOM_TOOL = "zoom_to_location"
# Map tools whose place becomes the view: lat, lon and zoom for the browser.
VIEW_TOOLS = frozenset({ZOOM_TOOL, "visualize_collection"})
POINT_ZOOM = 10
AREA_TYPES = frozenset({"Polygon", "MultiPolygon"})
# What to do instead, in the error: the model asked for a selection it made up, not the user.
NO_USER_SHAPE = "name the place instead (e.g. place: 'Luxembourg'), or leave place out"


def _bounds(geometry: Mapping[str, Any]) -> tuple[float, float, float, float] | None:
    """[west, south, east, north] of a GeoJSON geometry's coordinates (None if it has none)."""
    found = positions(geometry)
    xs = [float(x) for x, _ in found]
    ys = [float(y) for _, y in found]
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


def user_place_arguments(
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


def user_shape_missing(name: str, spatial: SpatialInput) -> bool:
    if name in SELECTION_NAMES:
        return not spatial.selected_feature
    return name in DRAWN_NAMES and not spatial.drawn_geometry


async def view_arguments(
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
