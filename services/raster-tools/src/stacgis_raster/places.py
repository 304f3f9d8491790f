"""Where a tool reads: a named place (resolved by vector-tools), a bbox or a GeoJSON geometry as
an `Area`, or a place or lon/lat as a point. Each error names the argument at fault."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from shapely import affinity
from shapely.geometry import Point, box
from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import ArgumentError, NotFoundError
from stacgis_raster.features import FeatureResolver, ResolvedPlace
from stacgis_raster.reads import Area
from stacgis_raster.settings import RasterSettings
from stacgis_raster.tool_args import (
    AreaArg,
    BoxArea,
    FeatureRef,
    GeometryArea,
    LonLat,
    PlaceName,
    PointArg,
    ZeroSizeBox,
)
from stacgis_raster.validation import check_lon_lat, parse_geojson_geometry


class PlaceArguments:
    """The place, bbox, geometry and lon/lat arguments of the tools (parsed in `tool_args`) read into
    an area or a point (RasterService is one; its scene tools use these through it)."""

    settings: RasterSettings
    resolver: FeatureResolver

    async def place_area(self, place: str, token: Callable[[], str]) -> tuple[Area, dict[str, Any]]:
        """A named place's area: a country's or state's real boundary, or a circle around a city."""
        resolved = await self.resolver.place(place, "place", token())
        info = dict(resolved.place)
        geom = parse_geojson_geometry(
            resolved.geometry, "place", polygonal=False, max_vertices=self.settings.max_geometry_vertices
        )
        if isinstance(geom, Point):
            km = self.settings.place_point_buffer_km
            info["used"] = {"circle_radius_km": km, "point": [geom.x, geom.y]}
            return Area(point_circle(geom.x, geom.y, km), "place", "place", info["ref"]), info
        if geom.geom_type not in {"Polygon", "MultiPolygon"}:
            raise ArgumentError("place", f"{info['name']!r} is a {geom.geom_type}, not an area or a point")
        info["used"] = "boundary"
        return Area(geom, "place", "place", info["ref"]), info

    async def place_point(self, place: str, token: Callable[[], str]) -> tuple[float, float, dict[str, Any]]:
        """A named city's point. A name that means an area first ("Luxembourg", the country) means its
        city of that name when there is one; an area alone is refused (one value needs one spot)."""
        resolved = await self.resolver.place(place, "place", token())
        info = dict(resolved.place)
        if resolved.geometry.get("type") != "Point":
            area = info
            city: ResolvedPlace | None
            try:
                city = await self.resolver.place(place, "place", token(), dataset="cities")
            except (ArgumentError, NotFoundError):
                city = None
            if city is None or city.geometry.get("type") != "Point":
                raise ArgumentError(
                    "place",
                    f"{area['name']!r} is a {area.get('kind', 'area')} (an area), not a point; name a city or give "
                    "lon/lat, or use get_raster_statistics with this place for the area",
                )
            resolved = city
            info = dict(city.place)
            info["note"] = f"the city {info['name']!r} used: a point tool needs a point, and {area['ref']} is an area"
        lon, lat = resolved.geometry["coordinates"][:2]
        x, y = check_lon_lat(lon, lat, lon_arg="place", lat_arg="place")
        info["used"] = "point"
        return x, y, info

    async def located_point(
        self, where: PointArg, token: Callable[[], str]
    ) -> tuple[float, float, dict[str, Any] | None]:
        """The point of a place (lon/lat given with it ignored, and said so), or the lon/lat given."""
        if isinstance(where, LonLat):
            return where.lon, where.lat, None
        x, y, info = await self.place_point(where.name, token)
        if where.ignored:
            info["note"] = "place used; lon/lat ignored"
        return x, y, info

    async def located_area(
        self, where: AreaArg | None, token: Callable[[], str], bbox_allowed: bool = True
    ) -> tuple[Area, dict[str, Any] | None]:
        """The area of a place (bbox/geometry given with it ignored, and said so), else of the bbox or geometry."""
        if not isinstance(where, PlaceName):
            return await self.area(where, token, bbox_allowed), None
        area, info = await self.place_area(where.name, token)
        if where.ignored:
            info["note"] = f"place used; {' and '.join(where.ignored)} ignored"
        return area, info

    async def area(
        self,
        where: BoxArea | ZeroSizeBox | GeometryArea | FeatureRef | None,
        token: Callable[[], str],
        bbox_allowed: bool = True,
    ) -> Area:
        if isinstance(where, FeatureRef):
            resolved = await self.resolver.geometry(where.dataset, where.feature_id, "geometry", token())
            geom = parse_geojson_geometry(resolved, "geometry", max_vertices=self.settings.max_geometry_vertices)
            return Area(geom, "feature", "geometry", {"dataset": where.dataset, "id": where.feature_id})
        if isinstance(where, GeometryArea):
            return Area(where.geometry, "geometry", "geometry", where.geometry.geom_type)
        if where is not None and bbox_allowed:
            # A box of zero size is refused here, as the bbox it is.
            bbox = where.bbox if isinstance(where, BoxArea) else where.as_bbox()
            return Area(box(*bbox), "bbox", "bbox", list(bbox))
        wanted = "place, bbox or geometry" if bbox_allowed else "place or geometry"
        raise ArgumentError(
            "place",
            f"{wanted} is required: best a place name, e.g. place 'Luxembourg' (or a GeoJSON polygon)",
        )


def point_circle(lon: float, lat: float, km: float) -> BaseGeometry:
    """A circle of `km` around a point, as a lon/lat polygon (degrees scaled by latitude; within 0.5 %)."""
    dy = km / 110.574
    dx = km / (111.320 * max(math.cos(math.radians(lat)), 0.01))
    unit = Point(0.0, 0.0).buffer(1.0, quad_segs=16)
    circle = affinity.affine_transform(unit, [dx, 0.0, 0.0, dy, lon, lat])
    return circle.intersection(box(-180.0, -90.0, 180.0, 90.0))
