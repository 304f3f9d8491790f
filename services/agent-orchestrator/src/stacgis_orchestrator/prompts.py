"""The system prompt and the context messages the model gets at the start of a run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stacgis_common.geojson import positions

from .result_shaping import shape_result

# Read by a small model on every cold start: short, direct rules. Nothing here may vary per run or
# per user (no ids, dates or budgets), so the prompt prefix stays byte-identical and cached.
BASE_PROMPT = """You are stacgis, a geospatial assistant beside a map. You answer by calling tools and reading \
their results.

Rules:
1. Pick the tool that fits the question and call it. For a named place, pass its name, e.g. \
place: "Luxembourg". Coordinates or a box the user wrote go in lon/lat or bbox. Never make up coordinates.
   A value at one point: query_raster_point. The mean, min, max or share over a country, area or box: \
get_raster_statistics (no place and no box: the whole collection). One place over time: get_timeseries. \
Two periods compared: detect_change. Dates, bands or time steps of a collection: get_raster_info. \
What a term, format or method means, why something is so, or where a dataset comes from: \
search_knowledge. "Remember ...": add_memory. Showing a place: zoom_to_location. \
Showing a collection as a layer: visualize_collection.
2. Use only numbers that appear in tool results. Never guess a number.
3. If no dataset, place, period or variable covers the question, or a tool says the place is outside the \
data, say so plainly and name what is missing. Never answer with another number instead.
4. If a tool returns an error, fix the arguments, or say what failed.
5. To show something to the user, use the map tools.
6. Answer in one or two sentences with the number, its unit and the dataset."""

# Sent after the prefix as the user's words (a user-role message), so asking for an answer never
# changes the cached prompt.
FORCE_ANSWER = (
    "Do not call any more tools. Answer my question now in plain text, using only the tool results above. "
    "If they do not answer it, say what is missing."
)
# Closes the result of the knowledge search made for a concept question (in the tool message, so the
# question stays the last user message): the 1.5B model otherwise paraphrased the
# passages away ("computed from bands 4 and 3" for "near infrared and red") or invented a producer.
# The passages come best match first; asked "which bands is NDVI computed from?", the model answered
# from the second (this product's NDVI range) when told only to use "these passages".
KNOWLEDGE_ANSWER = (
    "Answer the question from the first passage, keeping its own words for the key terms and names; "
    "add from the other passages only what the question asks and the first does not say. "
    "Say which document the answer comes from."
)
FORCE_ANSWER_AGAIN = "Tools are closed: a tool call is not run now. Write your answer as plain text."
REPEATED_CALL = (
    "You already called {name} with these arguments in this request (call {call_id}); its result or error "
    "is above. Do not call it again: answer from what you have."
)
# Sent (as the user's words) when an answer quotes numbers that no tool result gave. It repeats the
# question so the request stays in view however the conversation is compacted.
UNGROUNDED_DRAFT = (
    "Your answer has numbers that no tool result of this request gave: {numbers}. Never guess a number. "
    'Call the tool that gives them (name the place, e.g. place: "Luxembourg"), or, if no dataset, place, '
    "period or variable covers my question, say so plainly and name what is missing. My question was: {question}"
)
# Sent (as the user's words) when the tool gave the class at a point and the draft does not name it:
# asked "land or water?" the model answered "land" beside a result saying "Water".
UNSTATED_CLASS = (
    "The tool result says the class at the point is: {classes}. Your answer does not say that. "
    "Answer again with the class the tool gave. My question was: {question}"
)
# Sent (as the user's words) when every call of the last step failed and the model answered with
# advice instead of a fixed call; it repeats the question for the same reason.
FAILED_CALL = (
    "Your tool call failed: {error}. If the error shows the fix (another collection, band, date or place), "
    "call the tool again with it now. Only if it says the data does not cover my question, answer that "
    "plainly and name what is missing. My question was: {question}"
)
# The tool message for a data tool called after the knowledge search of a concept question.
CONCEPT_ANSWER = (
    "{name} was not run: this is a question about a concept, and the knowledge passages above answer it. "
    "Answer from them now."
)
# Sent (as the user's words) when the answer tells the user which tool to call instead of calling it
# ("you can use the `get_raster_statistics` function with the collection id nlcd-puerto-rico").
DESCRIBED_CALL = (
    "Do not tell me which tool to use: call {tools} yourself now, with the arguments you described, "
    "and answer from its result. My question was: {question}"
)
# Sent (as the user's words) when the answer tells the user how to call a tool the model has already
# called, whose result is above: asked which month was wettest, the model got the series (its
# summary naming 1999-09) and answered with the call's arguments as JSON (eval run 20).
READ_THE_RESULT = (
    "Do not tell me how to call a tool: you already called it, and its result is above. Answer my question "
    "from that result now, with the values and dates it gives. My question was: {question}"
)
# Shown instead of an answer whose numbers nothing could support: no tool result of the run or of
# the conversation, and no memory, holds a number, so any the model wrote is a guess.
# In place of a draft that does not say what a failed call said: the data it needs is still being loaded
# (`stacgis_common.arguments.still_loading`, e.g. a first start's place names).
STILL_LOADING_ANSWER = (
    "I cannot answer this yet: {what} are still being loaded, and until that ends the places among them "
    "cannot be found. Please ask again in a few minutes."
)
NO_DATA_ANSWER = (
    "I could not get a value for this from the data: no tool call of this request returned a result, "
    "so I will not guess one."
)
# Heads the knowledge passages shown in place of a concept answer that kept numbers no passage gives
# or described a tool call instead of explaining.
PASSAGES_HEADER = "The knowledge base says (shown as found, in place of my own answer, which did not keep to it):"
PASSAGES_SHOWN = 3
SUMMARY_HEADER = "[The model did not write an answer. These are the tool results of this request, shown as they came:]"


# With `place_names` off (an experiment setting): places are looked up first and passed as what the
# lookup returned, as before tools took place names.
PLACE_BY_NAME = 'For a named place, pass its name, e.g. place: "Luxembourg".'
PLACE_BY_LOOKUP = (
    "For a named place, look it up first with resolve_place or search_vector_features and pass what it returns."
)


def system_prompt(resources: dict[str, str], place_names: bool = True) -> str:
    """The first system message: the same for every run with the same settings and catalogues."""
    parts = [BASE_PROMPT if place_names else BASE_PROMPT.replace(PLACE_BY_NAME, PLACE_BY_LOOKUP)]
    for title in sorted(resources):
        parts.append(f"{title}:\n{resources[title]}")
    return "\n\n".join(parts)


def budget_message(max_steps: int) -> str:
    return f"You have at most {max_steps} steps (model calls) for this request; plan your tool calls accordingly."


def run_context_message(max_steps: int, memories: list[str], spatial: str | None, notes: Sequence[str] = ()) -> str:
    """Everything per run, in one message placed after the history, just before the request. It is a
    user-role message: Ollama moves every system message to the top of the prompt, where it would
    break the cached prefix."""
    parts = [CONTEXT_HEADER, budget_message(max_steps)]
    if memories:
        parts.append(memories_message(memories))
    if spatial:
        parts.append(spatial)
    parts.extend(notes)
    return "\n\n".join(parts)


CONTEXT_HEADER = "[Context for my next message, from the app:]"


def results_summary(results: list[tuple[str, str]], limit: int) -> str:
    """A factual fallback answer: each tool's result, shaped short, under a header saying what it is."""
    per_result = max(120, limit // max(1, len(results)))
    lines = [SUMMARY_HEADER]
    for name, text in results:
        shaped, _ = shape_result(text, per_result)
        lines.append(f"- {name}: {shaped}")
    return "\n".join(lines)


def passages_answer(results: list[tuple[str, str]], limit: int) -> str | None:
    """The top passages of the run's knowledge searches as the answer, each under its document's title
    and source; None when no search returned a passage."""
    passages: list[str] = []
    for _, text in results:
        try:
            data: Any = json.loads(text)
        except ValueError:
            continue
        found = data.get("results") if isinstance(data, dict) else None
        for item in found if isinstance(found, list) else []:
            if isinstance(item, dict) and isinstance(item.get("chunk"), str):
                title = item.get("heading") or item.get("title") or "passage"
                passages.append(f"- **{title}** ({item.get('source', 'knowledge base')}): {item['chunk'].strip()}")
    if not passages:
        return None
    per_passage = max(200, limit // min(len(passages), PASSAGES_SHOWN))
    shown = [p if len(p) <= per_passage else p[:per_passage].rsplit(" ", 1)[0] + " …" for p in passages]
    return "\n".join([PASSAGES_HEADER, *shown[:PASSAGES_SHOWN]])


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
    # Sorted, so the system prompt does not change when a server lists the same items in another order.
    for item in sorted(data, key=_sort_key):
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


def _sort_key(item: Any) -> str:
    if isinstance(item, dict):
        return str(item.get("id") or item.get("name") or item.get("dataset") or "")
    return str(item)


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
    coordinates = positions(geometry)
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
            + f'; properties {_cut_inline(text, max_chars // 2)}. For it, pass place: "selection".'
        )
    if drawn_geometry:
        # The tools resolve "drawn area" themselves: no coordinates for the model to copy (and garble).
        lines.append(f'The user drew a {_geometry_summary(drawn_geometry)}. For it, pass place: "drawn area".')
    if not lines:
        return None
    return "Spatial context:\n" + "\n".join(lines)


def _cut_inline(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "...}"
