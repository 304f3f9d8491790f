"""`datetime` arguments the orchestrator settles before a call: the user's words about time win.

Asked for "the highest monthly mean temperature of 1999 in Knoxville", the 1.5B model passed
`datetime: "1999-01"`: January, a month the question never named, so the answer was January's.
A single month or day in a call's `datetime`, when the question names that year but no month, day or
season, becomes the year. A question comparing two periods makes its statistics call a
detect_change over the question's two periods (below).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..llm.types import ToolCall

_MONTH_OR_DAY = re.compile(r"^(\d{4})-\d{2}(?:-\d{2})?$")
_MONTH_NUMBER = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")"
# A month, a season or a date the user wrote ("July", "1999-07", "7/1999", "the 3rd").
_TIME_WORDS = re.compile(
    rf"\b(?:{_MONTH}|spring|summer|autumn|fall|winter)\b|\b\d{{4}}-\d{{1,2}}\b|\b\d{{1,2}}/\d{{4}}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)\b",
    re.I,
)


def settle_period(call: ToolCall, question: str) -> ToolCall:
    """The call with a month or day the model chose widened to the year the question names."""
    value = call.arguments.get("datetime") if call.arguments_error is None else None
    if not isinstance(value, str):
        return call
    match = _MONTH_OR_DAY.match(value.strip())
    if match is None or _TIME_WORDS.search(question):
        return call
    year = match.group(1)
    if not re.search(rf"(?<![\w-]){year}(?![\w-])", question):
        return call
    return ToolCall(call.id, call.name, {**call.arguments, "datetime": year})


# Comparisons of two periods ("How much warmer was July than January 1999?", "change between March
# and September 1999", "summer (July to August 1999) than winter (January to February 1999)") are
# detect_change's: the 1.5B model made one statistics call for one of the months and answered with it.
COMPARISON_TOOL = "detect_change"
_COMPARED_TOOLS = frozenset({"get_raster_statistics", "compute_zonal_stats", COMPARISON_TOOL})
_AREA_KEYS = ("place", "bbox", "geometry", "band")
_CUE = re.compile(
    r"\b(?:warmer|colder|hotter|cooler|wetter|drier|change[sd]?|changing|difference|differ|compared?|"
    r"increase[sd]?|decrease[sd]?|rise|rose|fell|drop(?:ped)?)\b",
    re.I,
)
_RANGE = re.compile(rf"\(\s*({_MONTH})(?:\s+(\d{{4}}))?\s+(?:to|-|–|until)\s+({_MONTH})\s+(\d{{4}})\s*\)", re.I)
_SINGLE = re.compile(rf"\b({_MONTH})\b(?:\s+(\d{{4}}))?", re.I)
# A year written in a question (1800-2099), not part of a number or an identifier.
YEARS = re.compile(r"(?<![\w.-])(1[89]\d\d|20\d\d)(?![\w.-])")


def _month(name: str, year: str) -> str:
    return f"{year}-{_MONTH_NUMBER[name.lower()]:02d}"


def compared_periods(question: str) -> tuple[str, str] | None:
    """The two periods a question compares, earlier first ("1999-01", "1999-07" or ranges
    "1999-01/1999-02"), when it compares exactly two; else None."""
    if not _CUE.search(question):
        return None
    years = sorted(set(YEARS.findall(question)))
    periods: list[str] = []
    rest = question
    for found in _RANGE.finditer(question):
        first, first_year, last, year = found.groups()
        periods.append(f"{_month(first, first_year or year)}/{_month(last, year)}")
        rest = rest.replace(found.group(0), " ")
    for found in _SINGLE.finditer(rest):
        name, year = found.groups()
        if name.lower() == "may" and year is None:
            continue  # "may" is a verb more often than a month
        year = year or (years[0] if len(years) == 1 else None)
        if year is None:
            return None
        periods.append(_month(name, year))
    if len(periods) != 2 or periods[0] == periods[1]:
        return None
    earlier, later = sorted(periods)
    return earlier, later


def settle_comparison(call: ToolCall, question: str, offered_tool: Callable[[str], bool]) -> ToolCall:
    """A statistics (or change) call for a question comparing two periods, as detect_change over the
    question's periods (`offered_tool` tells whether detect_change can be called)."""
    if call.name not in _COMPARED_TOOLS or call.arguments_error is not None or not offered_tool(COMPARISON_TOOL):
        return call
    collection = call.arguments.get("collection_id")
    periods = compared_periods(question)
    if not isinstance(collection, str) or periods is None:
        return call
    arguments = {"collection_id": collection, "period_a": periods[0], "period_b": periods[1]}
    arguments.update({key: call.arguments[key] for key in _AREA_KEYS if call.arguments.get(key) is not None})
    return ToolCall(call.id, COMPARISON_TOOL, arguments)
