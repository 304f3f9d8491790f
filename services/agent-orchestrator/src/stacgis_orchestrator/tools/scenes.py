"""Scene questions the orchestrator settles before a call: counting scenes is an item search.

Asked "How many scenes of landsat7-olinda-scenes cover the box ... with at most 2 % cloud cover?",
the 1.5B model called `get_scene_timeseries` and answered without a number. A question asking how
many scenes (items, images) there are makes a data call on a scene collection an item search over
the same collection, area and period, and a cloud-cover limit the user wrote is the search's filter
whatever the model passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..llm.types import ToolCall

SEARCH_TOOL = "search_items"
_COUNT = re.compile(
    r"\b(?:how\s+many|number\s+of|count(?:\s+of)?)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:scenes?|items?|images?|acquisitions?|tiles?)\b",
    re.I,
)
# "at most 2 % cloud cover", "less than 10% clouds", "cloud cover below 5 %", "under 20 percent cloud"
_LIMIT = r"(?:at\s+most|less\s+than|under|below|up\s+to|no\s+more\s+than|<=?|≤)"
_PERCENT = r"(\d+(?:\.\d+)?)\s*(?:%|percent)"
_CLOUD_LIMIT = re.compile(
    rf"{_LIMIT}\s*{_PERCENT}\s*(?:of\s+)?clouds?\b|\bcloud(?:s|\s+cover(?:age)?)?\s+(?:of\s+)?{_LIMIT}\s*{_PERCENT}",
    re.I,
)
_AREA_KEYS = ("place", "bbox", "geometry", "datetime")


def asks_to_count_scenes(question: str) -> bool:
    return _COUNT.search(question) is not None


def cloud_limit(question: str) -> float | None:
    """The cloud-cover limit the question writes, in percent; None when it writes none."""
    found = _CLOUD_LIMIT.search(question)
    if found is None:
        return None
    return float(found.group(1) or found.group(2))


def settle_scene_count(call: ToolCall, question: str, is_scene_collection: Callable[[str], bool]) -> ToolCall:
    """A data call on a scene collection for a question counting scenes, as `search_items` over the
    call's collection, area and period with the question's cloud limit; other calls unchanged."""
    collection = call.arguments.get("collection_id")
    if (
        call.arguments_error is not None
        or not isinstance(collection, str)
        or not is_scene_collection(collection)
        or not asks_to_count_scenes(question)
    ):
        return call
    if call.name == SEARCH_TOOL:
        arguments = dict(call.arguments)
    else:
        arguments = {"collection_id": collection}
        arguments.update({k: call.arguments[k] for k in _AREA_KEYS if call.arguments.get(k) is not None})
        start, end = call.arguments.get("start"), call.arguments.get("end")
        if "datetime" not in arguments and isinstance(start, str) and isinstance(end, str):
            arguments["datetime"] = f"{start}/{end}"
        if isinstance(call.arguments.get("max_cloud_cover"), (int, float)):
            arguments["max_cloud_cover"] = call.arguments["max_cloud_cover"]
    limit = cloud_limit(question)
    if limit is not None:
        arguments["max_cloud_cover"] = limit
    if call.name == SEARCH_TOOL and arguments == call.arguments:
        return call
    return ToolCall(call.id, SEARCH_TOOL, arguments)
