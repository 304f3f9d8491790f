"""The system prompt and the context messages the model gets at the start of a run."""

from __future__ import annotations

import json
from typing import Any

BASE_PROMPT = """You are stacgis, a geospatial assistant. You answer questions about places, maps, satellite \
imagery, elevation, land cover, climate grids and vector data (countries, cities) by calling tools and \
reading their results.

How to work:
- Think about which data answers the question, call the tools you need, then answer.
- Use only numbers that tools returned; state units, the dataset used and any limits (resolution, clipping).
- If a tool reports an error, read it, fix the arguments and try again, or explain what failed.
- Coordinates are WGS 84 degrees; a bounding box is [west, south, east, north].
- Map tools (zoom_to_location, visualize_collection, set_map_style, toggle_ui_panel, generate_chart) act \
on the user's screen: use them when showing something helps.
- Answer concisely, in the user's language, in Markdown."""

BUDGET_WARNING = (
    "CRITICAL INSTRUCTION: this is your last chance to act. Do not call any tool now. "
    "Answer the user with what you have learned so far, and say what is still missing."
)


def system_prompt(max_steps: int, user_id: str, resources: dict[str, str]) -> str:
    parts = [
        BASE_PROMPT,
        f"You have at most {max_steps} steps (model calls) for this request; plan your tool calls accordingly.",
        f"The user's id is {user_id}; tools already know who the user is, never pass it as an argument.",
    ]
    for title, text in resources.items():
        parts.append(f"{title}:\n{text}")
    return "\n\n".join(parts)


def summarize_resource(text: str, limit: int) -> str:
    """A compact listing of a resource: one line per item of a JSON list, cut at `limit` characters."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        return _cut(text.strip(), limit)
    if isinstance(data, dict):
        for key in ("collections", "datasets", "items", "features", "results"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        return _cut(json.dumps(data, ensure_ascii=False, separators=(",", ":")), limit)
    lines = []
    for item in data:
        if isinstance(item, dict):
            ident = item.get("id") or item.get("name") or item.get("dataset")
            title = item.get("title") or item.get("description") or ""
            extras = [f"{key}: {_plain(item[key])}" for key in EXTRA_KEYS if item.get(key)]
            line = (
                f"- {ident}"
                + (f": {title}" if title else "")
                + (f" ({'; '.join(str(e) for e in extras)})" if extras else "")
            )
            lines.append(line)
        else:
            lines.append(f"- {item}")
    return _cut("\n".join(lines), limit)


EXTRA_KEYS = ("units", "time", "time_range", "temporal_extent", "kind", "count")


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit("\n", 1)[0] + "\n- ... (more available through the tools)"


def memories_message(memories: list[str]) -> str:
    lines = "\n".join(f"- {memory}" for memory in memories)
    return (
        "Relevant long-term memories about this user (from earlier sessions; use them when they help, "
        f"never contradict what the user says now):\n{lines}"
    )


def parse_memories(text: str) -> list[str]:
    """Memory texts from a search_memories result: {"memories": [...]}, a list, or plain lines."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        return [line.strip("- ").strip() for line in text.splitlines() if line.strip()]
    if isinstance(data, dict):
        data = data.get("memories", data.get("results", data.get("items", [])))
    memories = []
    for item in data if isinstance(data, list) else []:
        if isinstance(item, str):
            memories.append(item)
        elif isinstance(item, dict):
            content = item.get("content") or item.get("text") or item.get("memory")
            if content:
                memories.append(str(content))
    return memories


def _geometry_summary(geometry: dict[str, Any]) -> str:
    kind = geometry.get("type", "geometry")
    coordinates: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, list) and len(value) >= 2 and all(isinstance(v, int | float) for v in value[:2]):
            coordinates.append(value[:2])
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(geometry.get("coordinates"))
    for member in geometry.get("geometries", []) or []:
        if isinstance(member, dict):
            walk(member.get("coordinates"))
    if not coordinates:
        return str(kind)
    lons = [c[0] for c in coordinates]
    lats = [c[1] for c in coordinates]
    bbox = [round(min(lons), 5), round(min(lats), 5), round(max(lons), 5), round(max(lats), 5)]
    if len(coordinates) == 1:
        return f"{kind} at lon {lons[0]}, lat {lats[0]}"
    return f"{kind} with {len(coordinates)} vertices, bbox {bbox}"


def spatial_context_message(
    center: tuple[float, float] | None,
    zoom: float | None,
    selected_feature: dict[str, Any] | None,
    drawn_geometry: dict[str, Any] | None,
    max_chars: int = 3000,
) -> str | None:
    """What the user is looking at, for "what is this area?" questions."""
    lines = []
    if center is not None:
        lat, lon = center
        lines.append(
            f"The user's map is centred on lat {lat:.5f}, lon {lon:.5f}" + (f" at zoom {zoom:g}." if zoom else ".")
        )
    if selected_feature:
        properties = selected_feature.get("properties") or {}
        geometry = selected_feature.get("geometry") or {}
        text = json.dumps(properties, ensure_ascii=False, separators=(",", ":"))
        lines.append(
            "The user selected this feature: "
            + (_geometry_summary(geometry) if isinstance(geometry, dict) else "feature")
            + f"; properties {_cut_inline(text, max_chars // 2)}"
        )
    if drawn_geometry:
        text = json.dumps(drawn_geometry, ensure_ascii=False, separators=(",", ":"))
        summary = _geometry_summary(drawn_geometry)
        lines.append(
            f"The user drew a {summary}. "
            + (f"Its GeoJSON (pass it as `geometry` to tools that take one): {text}" if len(text) <= max_chars else "")
        )
    if not lines:
        return None
    return "Spatial context:\n" + "\n".join(lines)


def _cut_inline(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "...}"
