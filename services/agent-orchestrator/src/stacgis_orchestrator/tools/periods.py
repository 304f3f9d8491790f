"""`datetime` arguments the orchestrator settles before a call: the user's words about time win.

Asked for "the highest monthly mean temperature of 1999 in Knoxville", the 1.5B model passed
`datetime: "1999-01"`: January, a month the question never named, so the answer was January's.
A single month or day in a call's `datetime`, when the question names that year but no month, day or
season, becomes the year.
"""

from __future__ import annotations

import re

from ..llm.types import ToolCall

_MONTH_OR_DAY = re.compile(r"^(\d{4})-\d{2}(?:-\d{2})?$")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|spring|summer|autumn|fall|winter"
)
# A month, a season or a date the user wrote ("July", "1999-07", "7/1999", "the 3rd").
_TIME_WORDS = re.compile(
    r"\b(?:" + _MONTHS + r")\b|\b\d{4}-\d{1,2}\b|\b\d{1,2}/\d{4}\b|\b\d{1,2}(?:st|nd|rd|th)\b", re.I
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
