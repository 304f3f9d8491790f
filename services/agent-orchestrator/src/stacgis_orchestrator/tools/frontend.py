"""Frontend tools: commands for the user's map and UI. Validated like any tool, then emitted as
`frontend_tool` events for the browser instead of running on a server; the model gets an acknowledgement."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .registry import RegisteredTool

PANELS = ["chat", "sessions", "activity", "legend"]
CHART_TYPES = ["line", "bar", "scatter", "pie", "doughnut"]
MAX_CHART_POINTS = 2000
# Colour-blind friendly palette (Okabe-Ito).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


class FrontendToolError(ValueError):
    """Arguments pass the schema but make no sense (e.g. 12 labels and 11 values)."""


@dataclass(frozen=True)
class FrontendCommand:
    arguments: dict[str, Any]
    acknowledgement: str


def _zoom(args: dict[str, Any]) -> FrontendCommand:
    # A place name is replaced by its coordinates before this runs (tools/places.py).
    if "lat" not in args or "lon" not in args:
        raise FrontendToolError("place: give a place name, e.g. place 'Nairobi' (or both lat and lon)")
    zoom = args.get("zoom", 10)
    ui: dict[str, Any] = {"lat": args["lat"], "lon": args["lon"], "zoom": zoom}
    where = f"lat {args['lat']}, lon {args['lon']}"
    if args.get("place"):
        ui["place"] = args["place"]
        where = f"{args['place']} at {where}"
    return FrontendCommand(ui, f"The user's map now shows {where} at zoom {zoom}.")


def _visualize(args: dict[str, Any]) -> FrontendCommand:
    kept = ("collection_id", "colormap", "rescale", "expression", "datetime")
    ui: dict[str, Any] = {key: args[key] for key in kept if key in args}
    rescale = args.get("rescale")
    if rescale is not None and rescale[0] >= rescale[1]:
        raise FrontendToolError("rescale: the first value (minimum) must be below the second (maximum)")
    shown = f"Collection {args['collection_id']} is now shown as a layer on the user's map"
    if "expression" in args:
        # The tile server parses the expression when the browser asks for tiles; a bad one shows as
        # the layer's error there, so the model is told exactly what was asked for.
        shown += f" as {args['expression']}"
    # A place name is replaced by its view (lat, lon, zoom) before this runs (tools/places.py).
    if "lat" in args and "lon" in args:
        ui.update({key: args[key] for key in ("place", "lat", "lon", "zoom") if key in args})
        shown += f", centred on {args.get('place') or 'the place'} at lat {args['lat']}, lon {args['lon']}"
    return FrontendCommand(ui, shown + ".")


BASEMAPS = ("light", "dark", "satellite")


def _style(args: dict[str, Any]) -> FrontendCommand:
    style = str(args["style"]).strip()
    if style.lower() in BASEMAPS:
        style = style.lower()
    elif not style.startswith(("http://", "https://")):
        raise FrontendToolError("style: must be light, dark, satellite or an http(s) URL of a MapLibre style")
    return FrontendCommand({"style": style}, f"The basemap is now {style}.")


def _check_style_host(args: dict[str, Any], allowed: Sequence[str]) -> None:
    """A style URL makes the user's browser fetch from its host (and from every host the style
    names): text planted in a document must not be able to point it anywhere. Only hosts the
    deployment lists are accepted; `*.example.org` allows its subdomains."""
    style = str(args.get("style", "")).strip()
    if style.lower() in BASEMAPS or not style.startswith(("http://", "https://")):
        return
    host = (urlsplit(style).hostname or "").lower()
    for entry in (a.lower() for a in allowed):
        if host == entry or (entry.startswith("*.") and host.endswith(entry[1:])):
            return
    hosts = ", ".join(allowed) if allowed else "none"
    raise FrontendToolError(
        f"style: the host {host or '?'} is not allowed for map styles (allowed: {hosts}); use light, dark or satellite"
    )


def _panel(args: dict[str, Any]) -> FrontendCommand:
    ui: dict[str, Any] = {"panel": args["panel"]}
    if "open" in args:
        ui["open"] = args["open"]
    state = "toggled" if "open" not in args else ("opened" if args["open"] else "closed")
    return FrontendCommand(ui, f"The {args['panel']} panel was {state}.")


def chart_config(args: dict[str, Any]) -> dict[str, Any]:
    """A Chart.js configuration from the model's simpler description of a chart."""
    kind = args["chart_type"]
    labels = list(args.get("labels") or [])
    datasets = args["datasets"]
    points = sum(len(d["data"]) for d in datasets)
    if points > MAX_CHART_POINTS:
        raise FrontendToolError(f"datasets: {points} values in all; at most {MAX_CHART_POINTS} fit in a chart")
    chart_sets = []
    for index, dataset in enumerate(datasets):
        values = dataset["data"]
        colour = PALETTE[index % len(PALETTE)]
        if kind == "scatter":
            if len(labels) != len(values):
                raise FrontendToolError(
                    f"datasets.{index}.data: scatter charts need one x value in labels per value "
                    f"({len(labels)} labels, {len(values)} values)"
                )
            try:
                data: list[Any] = [{"x": float(x), "y": y} for x, y in zip(labels, values, strict=True)]
            except (TypeError, ValueError):
                raise FrontendToolError("labels: scatter charts need numeric x values") from None
        else:
            if labels and len(labels) != len(values):
                raise FrontendToolError(
                    f"datasets.{index}.data: has {len(values)} values but there are {len(labels)} labels"
                )
            data = list(values)
        entry: dict[str, Any] = {"label": dataset.get("label") or f"Series {index + 1}", "data": data}
        if kind in ("pie", "doughnut"):
            entry["backgroundColor"] = [PALETTE[i % len(PALETTE)] for i in range(len(values))]
        else:
            entry["borderColor"] = colour
            entry["backgroundColor"] = colour + ("33" if kind == "line" else "")
        chart_sets.append(entry)
    if not labels and kind != "scatter":
        labels = [str(i + 1) for i in range(max(len(d["data"]) for d in datasets))]
    options: dict[str, Any] = {
        "responsive": True,
        "plugins": {"title": {"display": bool(args.get("title")), "text": args.get("title", "")}},
    }
    if kind not in ("pie", "doughnut"):
        options["scales"] = {
            axis: {"title": {"display": bool(args.get(f"{axis}_label")), "text": args.get(f"{axis}_label", "")}}
            for axis in ("x", "y")
        }
    data_block: dict[str, Any] = {"datasets": chart_sets}
    if kind != "scatter":
        data_block["labels"] = [str(label) for label in labels]
    return {"type": kind, "data": data_block, "options": options}


def _chart(args: dict[str, Any]) -> FrontendCommand:
    config = chart_config(args)
    title = args.get("title") or "untitled"
    return FrontendCommand(
        {"chart": config},
        f"A {args['chart_type']} chart '{title}' with {len(args['datasets'])} series is now shown to the user.",
    )


NUMBER_PAIR = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def view_properties(place_description: str) -> dict[str, Any]:
    """The arguments of a map tool that sets the view: a place name (settled by tools/places.py) or lat/lon."""
    return {
        "place": {"type": "string", "maxLength": 200, "description": place_description},
        "lat": {"type": "number", "minimum": -90, "maximum": 90, "description": "Only if no place"},
        "lon": {"type": "number", "minimum": -180, "maximum": 180, "description": "Only if no place"},
        "zoom": {"type": "number", "minimum": 0, "maximum": 22, "description": "0 world to 18 street"},
    }


FRONTEND_TOOLS: list[tuple[RegisteredTool, Callable[[dict[str, Any]], FrontendCommand]]] = [
    (
        RegisteredTool(
            name="zoom_to_location",
            description="Use for moving the user's map to a place: pass place, e.g. 'Berlin'.",
            input_schema={
                "type": "object",
                "properties": view_properties("Place name, e.g. 'Berlin'"),
                "required": [],
                "additionalProperties": False,
            },
            kind="frontend",
        ),
        _zoom,
    ),
    (
        RegisteredTool(
            name="visualize_collection",
            description="Use for adding a raster collection as a coloured layer to the user's map (not for places).",
            input_schema={
                "type": "object",
                "properties": {
                    "collection_id": {
                        "type": "string",
                        "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
                        "description": "Collection id",
                    },
                    "colormap": {
                        "type": "string",
                        "pattern": "^[A-Za-z0-9_]{1,64}$",
                        "description": "e.g. viridis, terrain",
                    },
                    "rescale": {**NUMBER_PAIR, "description": "[min, max] of the colours, in data units"},
                    "expression": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "pattern": "^[A-Za-z0-9_ .+*/()-]+$",
                        "description": "Scene collections and cubes only: index or band math to show, e.g. ndvi, ndwi",
                    },
                    "datetime": {
                        "type": "string",
                        "maxLength": 64,
                        "pattern": "^[0-9TZ:/.-]+$",
                        "description": "Scene collections and cubes only: date or period, e.g. 1999-07",
                    },
                    **view_properties("Optional place to centre the map on, e.g. 'Luxembourg'"),
                },
                "required": ["collection_id"],
                "additionalProperties": False,
            },
            kind="frontend",
        ),
        _visualize,
    ),
    (
        RegisteredTool(
            name="set_map_style",
            description="Use for changing the basemap: light, dark or satellite.",
            input_schema={
                "type": "object",
                "properties": {
                    "style": {
                        "type": "string",
                        "description": "light, dark or satellite (or a style URL from a host the deployment allows)",
                    }
                },
                "required": ["style"],
                "additionalProperties": False,
            },
            kind="frontend",
        ),
        _style,
    ),
    (
        RegisteredTool(
            name="toggle_ui_panel",
            description="Use for opening or closing a panel: chat, sessions, activity or legend.",
            input_schema={
                "type": "object",
                "properties": {
                    "panel": {"type": "string", "enum": PANELS},
                    "open": {"type": "boolean", "description": "true opens, false closes; omit to toggle"},
                },
                "required": ["panel"],
                "additionalProperties": False,
            },
            kind="frontend",
        ),
        _panel,
    ),
    (
        RegisteredTool(
            name="generate_chart",
            description="Use for drawing a chart of numbers you already have, e.g. a time series.",
            input_schema={
                "type": "object",
                "properties": {
                    "chart_type": {"type": "string", "enum": CHART_TYPES},
                    "title": {"type": "string", "maxLength": 200},
                    "labels": {
                        "type": "array",
                        "items": {"type": ["string", "number"]},
                        "maxItems": MAX_CHART_POINTS,
                        "description": "One label or x value per value",
                    },
                    "datasets": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 12,
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string", "maxLength": 200},
                                "data": {"type": "array", "items": {"type": "number"}, "minItems": 1},
                            },
                            "required": ["data"],
                        },
                    },
                    "x_label": {"type": "string", "maxLength": 100},
                    "y_label": {"type": "string", "maxLength": 100},
                },
                "required": ["chart_type", "datasets"],
                "additionalProperties": False,
            },
            kind="frontend",
        ),
        _chart,
    ),
]

FRONTEND_TOOL_NAMES = [tool.name for tool, _ in FRONTEND_TOOLS]
_HANDLERS = {tool.name: handler for tool, handler in FRONTEND_TOOLS}


def frontend_tools() -> list[RegisteredTool]:
    return [tool for tool, _ in FRONTEND_TOOLS]


def prepare_frontend_command(name: str, arguments: dict[str, Any], style_hosts: Sequence[str] = ()) -> FrontendCommand:
    """The UI payload and the model's acknowledgement for validated arguments."""
    if name == "set_map_style":
        _check_style_host(arguments, style_hosts)
    return _HANDLERS[name](arguments)
