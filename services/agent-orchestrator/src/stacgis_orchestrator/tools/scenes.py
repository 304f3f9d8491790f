"""Scene questions the orchestrator settles before a call: counting scenes is an item search, a
composite is `get_scene_statistics`'.

Asked "How many scenes of landsat7-olinda-scenes cover the box ... with at most 2 % cloud cover?",
the 1.5B model called `get_scene_timeseries` and answered without a number. A question asking how
many scenes (items, images) there are makes a data call on a scene collection an item search over
the same collection, area and period, and a cloud-cover limit the user wrote is the search's filter
whatever the model passed. Asked for "the maximum composite of precipitation over 1999", it called
`compute_zonal_stats` with `composite: median`: a question naming a composite makes a data call on a
scene collection `get_scene_statistics` with the composite the user named. A cloud limit the question
never speaks of is dropped: the model added `max_cloud_cover: 10` to a monthly precipitation
question, and the climate tiles, which have no cloud cover, then matched no item. Asked "which
month of 1999 had the highest mean precipitation inside the box ...", it made one median composite
(with `expression: "mean"`) and named a month the result never gave: a question asking which month
(year, day) had the most or least of something makes a data call on a scene collection
`get_scene_timeseries` over the question's year, whose summary names the dates of the extremes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..llm.types import ToolCall
from .periods import YEARS

SEARCH_TOOL = "search_items"
STATISTICS_TOOL = "get_scene_statistics"
SERIES_TOOL = "get_scene_timeseries"
_COUNT = re.compile(
    r"\b(?:how\s+many|number\s+of|count(?:\s+of)?)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:scenes?|items?|images?|acquisitions?|tiles?)\b",
    re.I,
)
# "at most 2 % cloud cover", "less than 10% clouds", "cloud cover below 5 %", "under 20 percent cloud"
_LIMIT = r"(?:at\s+most|less\s+than|under|below|up\s+to|no\s+more\s+than|<=?|≤)"
_PERCENT = r"(\d+(?:\.\d+)?)\s*(?:%|percent)"
CLOUD_LIMIT = re.compile(
    rf"{_LIMIT}\s*{_PERCENT}\s*(?:of\s+)?clouds?\b|\bcloud(?:s|\s+cover(?:age)?)?\s+(?:of\s+)?{_LIMIT}\s*{_PERCENT}",
    re.I,
)
# What a settled call keeps of the model's: where and when and the cloud filter (an item search),
# and the cloud mask (statistics).
_SEARCH_KEPT = ("place", "bbox", "geometry", "datetime", "max_cloud_cover")
_STATISTICS_KEPT = (*_SEARCH_KEPT, "cloud_mask")
# "the maximum composite", "a median composite", "composite of the mean"
_KINDS = {
    "maximum": "max",
    "max": "max",
    "minimum": "min",
    "min": "min",
    "median": "median",
    "mean": "mean",
    "average": "mean",
    "latest": "latest",
}
_KIND = r"(" + "|".join(_KINDS) + r")"
_COMPOSITE = re.compile(rf"\b{_KIND}(?:[\s-]+[\w-]+)?[\s-]+composite\b|\bcomposite\s+of\s+(?:the\s+)?{_KIND}\b", re.I)


_CLOUD_WORD = re.compile(r"\bcloud", re.I)
# "which month ... the highest", "in which year was it driest", "the wettest month"
_EXTREME = (
    r"(?:highest|lowest|most|least|greatest|smallest|maxim(?:um|al)|minim(?:um|al)|peak|"
    r"wettest|driest|warmest|coldest|hottest|coolest|greenest)"
)
_PERIOD_WORD = r"(?:month|year|day|date|season)"
_WHICH_PERIOD = re.compile(
    rf"\b(?:which|what)\s+{_PERIOD_WORD}\b.*\b{_EXTREME}\b|\b{_EXTREME}\s+{_PERIOD_WORD}\b", re.I | re.S
)
# Words for a statistic, never an asset or index name: the model wrote `expression: "mean"`.
_STATISTIC_WORDS = frozenset({"mean", "average", "median", "max", "maximum", "min", "minimum", "sum", "std", "total"})


def settle_cloud_limit(call: ToolCall, question: str) -> ToolCall:
    """The call without a `max_cloud_cover` the question does not ask for (no word about clouds)."""
    if call.arguments.get("max_cloud_cover") is None or _CLOUD_WORD.search(question):
        return call
    return ToolCall(call.id, call.name, {k: v for k, v in call.arguments.items() if k != "max_cloud_cover"})


def asks_to_count_scenes(question: str) -> bool:
    return _COUNT.search(question) is not None


def cloud_limit(question: str) -> float | None:
    """The cloud-cover limit the question writes, in percent; None when it writes none."""
    found = CLOUD_LIMIT.search(question)
    if found is None:
        return None
    return float(found.group(1) or found.group(2))


def _scene_collection(call: ToolCall, is_scene_collection: Callable[[str], bool]) -> str | None:
    """The scene collection a well-formed call names; None for any other call."""
    collection = call.arguments.get("collection_id")
    if call.arguments_error is not None or not isinstance(collection, str) or not is_scene_collection(collection):
        return None
    return collection


def _settled(call: ToolCall, name: str, arguments: dict[str, Any], kept: tuple[str, ...]) -> ToolCall:
    """`arguments` plus the `kept` ones of the model's call, as a call of `name` (the call itself when
    nothing changed)."""
    for key in kept:
        if key not in arguments and call.arguments.get(key) is not None:
            arguments[key] = call.arguments[key]
    start, end = call.arguments.get("start"), call.arguments.get("end")
    if name != call.name and "datetime" not in arguments and isinstance(start, str) and isinstance(end, str):
        arguments["datetime"] = f"{start}/{end}"  # a series' period, as the other tools write it
    if name == call.name and arguments == call.arguments:
        return call
    return ToolCall(call.id, name, arguments)


def settle_scene_count(call: ToolCall, question: str, is_scene_collection: Callable[[str], bool]) -> ToolCall:
    """A data call on a scene collection for a question counting scenes, as `search_items` over the
    call's collection, area and period with the question's cloud limit; other calls unchanged."""
    collection = _scene_collection(call, is_scene_collection)
    if collection is None or not asks_to_count_scenes(question):
        return call
    arguments: dict[str, Any] = dict(call.arguments) if call.name == SEARCH_TOOL else {"collection_id": collection}
    limit = cloud_limit(question)
    if limit is not None:
        arguments["max_cloud_cover"] = limit
    return _settled(call, SEARCH_TOOL, arguments, _SEARCH_KEPT)


def composite_asked(question: str) -> str | None:
    """The composite the question names ("max", "median", ...); None when it names none."""
    found = _COMPOSITE.search(question)
    return None if found is None else _KINDS[(found.group(1) or found.group(2)).lower()]


def settle_scene_composite(
    call: ToolCall, question: str, is_scene_collection: Callable[[str], bool], quantity: str | None
) -> ToolCall:
    """A data call on a scene collection for a question naming a composite, as `get_scene_statistics`
    with that composite; the expression is the call's, else its band, else the quantity the question
    names (raster-tools knows an asset by the words of its description)."""
    collection = _scene_collection(call, is_scene_collection)
    composite = composite_asked(question)
    if collection is None or composite is None or call.name == SEARCH_TOOL:
        return call
    expression = call.arguments.get("expression") or call.arguments.get("band") or quantity
    if not isinstance(expression, str) or not expression.strip():
        return call
    arguments = {"collection_id": collection, "expression": expression, "composite": composite}
    return _settled(call, STATISTICS_TOOL, arguments, _STATISTICS_KEPT)


def asks_which_period(question: str) -> bool:
    """The question asks which month (year, day) had the most or least of something."""
    return _WHICH_PERIOD.search(question) is not None


def _series_period(call: ToolCall, question: str) -> dict[str, str]:
    """start/end of the series: the call's own, else its `datetime` range or year, else the one year the
    question names; none (the whole collection) otherwise."""
    start, end = call.arguments.get("start"), call.arguments.get("end")
    if isinstance(start, str) and isinstance(end, str):
        return {"start": start, "end": end}
    value = call.arguments.get("datetime")
    if isinstance(value, str) and "/" in value:
        first, _, last = value.partition("/")
        if first.strip() and last.strip() and ".." not in value:
            return {"start": first.strip(), "end": last.strip()}
    years = set(YEARS.findall(question))
    if isinstance(value, str) and re.fullmatch(r"\d{4}", value.strip()):
        years = {value.strip()}
    if len(years) == 1:
        year = years.pop()
        return {"start": f"{year}-01", "end": f"{year}-12"}
    return {}


def settle_scene_series(
    call: ToolCall, question: str, is_scene_collection: Callable[[str], bool], quantity: str | None
) -> ToolCall:
    """A data call on a scene collection for a question asking which month (year, day) had the most or
    least of something, as `get_scene_timeseries` over the question's period; the expression is the
    call's unless it names a statistic, else its band, else the quantity the question names."""
    collection = _scene_collection(call, is_scene_collection)
    if collection is None or call.name in (SEARCH_TOOL, SERIES_TOOL) or not asks_which_period(question):
        return call
    candidates = (call.arguments.get("expression"), call.arguments.get("band"), quantity)
    expression = next(
        (c for c in candidates if isinstance(c, str) and c.strip() and c.strip().lower() not in _STATISTIC_WORDS),
        None,
    )
    if expression is None:
        return call
    arguments: dict[str, Any] = {
        "collection_id": collection,
        "expression": expression,
        **_series_period(call, question),
    }
    for key in ("place", "bbox", "geometry", "max_cloud_cover", "cloud_mask"):
        if call.arguments.get(key) is not None:
            arguments[key] = call.arguments[key]
    return ToolCall(call.id, SERIES_TOOL, arguments)
