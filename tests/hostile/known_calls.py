"""Good calls of the known tools: the base every hostile example perturbs (so a hostile value in one
argument reaches the code behind the others), and the normal call that proves a server still works.
A tool missing here gets harmless values derived from its schema."""

from __future__ import annotations

from typing import Any

from hostile_values import plausible_value

LUX_SQUARE = {
    "type": "Polygon",
    "coordinates": [[[6.0, 49.6], [6.2, 49.6], [6.2, 49.8], [6.0, 49.8], [6.0, 49.6]]],
}

GOOD_CALLS: dict[str, dict[str, Any]] = {
    # raster-tools
    "list_raster_collections": {},
    "search_raster_collections": {"query": "elevation"},
    "get_raster_info": {"collection_id": "luxembourg-dem"},
    "get_raster_statistics": {"collection_id": "luxembourg-dem", "bbox": [6.0, 49.6, 6.2, 49.8]},
    "query_raster_point": {"collection_id": "luxembourg-dem", "lon": 6.1, "lat": 49.7},
    "query_multiple_rasters_point": {"collection_ids": ["luxembourg-dem"], "lon": 6.1, "lat": 49.7},
    "get_timeseries": {"collection_id": "global-precipitation-2016", "lon": 6.1, "lat": 49.7},
    "compute_zonal_stats": {"collection_id": "luxembourg-dem", "geometry": LUX_SQUARE},
    "detect_change": {"collection_id": "bcsd-temperature-1999", "period_a": "1999-01", "period_b": "1999-07"},
    "search_items": {"collection_id": "landsat7-olinda-scenes", "bbox": [-34.9, -8.02, -34.86, -7.98], "limit": 5},
    "get_scene_statistics": {
        "collection_id": "landsat7-olinda-scenes",
        "expression": "ndvi",
        "bbox": [-34.9, -8.0, -34.88, -7.98],
    },
    "get_scene_timeseries": {
        "collection_id": "bcsd-1999-cube",
        "expression": "tas",
        "bbox": [-80.0, 35.0, -79.0, 36.0],
        "start": "1999-03",
        "end": "1999-05",
    },
    # vector-tools
    "list_vector_datasets": {},
    "search_vector_features": {"query": "Berlin", "limit": 3},
    "get_vector_feature": {"dataset": "countries", "feature_id": "LUX"},
    "query_vector_by_bbox": {"dataset": "countries", "bbox": [5.9, 49.4, 6.5, 50.2]},
    # knowledge-tools
    "search_knowledge": {"query": "what is a digital elevation model"},
    "add_knowledge": {"title": "hostile test note", "content": "Hostile-input test note: NDVI ranges from -1 to 1."},
    # memory-tools
    "search_memories": {"query": "units"},
    "add_memory": {"content": "The hostile-input tester prefers metres."},
    "forget_memory": {"memory_id": "00000000-0000-0000-0000-000000000000"},
}

# The call that shows each server still answers after the hostile ones.
HEALTH_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "raster-tools": ("get_raster_info", {"collection_id": "luxembourg-dem"}),
    "vector-tools": ("get_vector_feature", {"dataset": "countries", "feature_id": "LUX"}),
    "knowledge-tools": ("search_knowledge", {"query": "elevation"}),
    "memory-tools": ("search_memories", {"query": "units"}),
}


def base_arguments(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A good call of `tool` when known, else plausible values for its required arguments."""
    properties: dict[str, Any] = schema.get("properties") or {}
    if tool in GOOD_CALLS:
        known = {key: value for key, value in GOOD_CALLS[tool].items() if key in properties}
        missing = [name for name in schema.get("required") or [] if name not in known]
        if not missing:
            return known
    return {name: plausible_value(properties.get(name) or {}) for name in schema.get("required") or []}


def health_call(server: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    names = {tool["name"]: tool for tool in tools}
    if server in HEALTH_CALLS and HEALTH_CALLS[server][0] in names:
        tool = HEALTH_CALLS[server][0]
        return tool, base_arguments(tool, names[tool]["inputSchema"])
    first = tools[0]
    return first["name"], base_arguments(first["name"], first["inputSchema"])
