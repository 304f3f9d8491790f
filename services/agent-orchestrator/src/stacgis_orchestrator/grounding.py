"""Grounding: every number of a final answer checked against the numbers of the run's tool results.

A number is *supported* when a tool result of the same run holds a value that, rounded to the
precision the answer wrote, equals it (within a small relative tolerance), directly or after a
unit conversion where the tool reported its unit. Numbers the user wrote in the question count as
given. Years, dates, times and list numbering are not facts to check and are left out.
See docs/orchestrator.md ("Grounding") for the rules.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

# Relative slack on top of the written precision: float noise and conversion constants.
RELATIVE_TOLERANCE = 0.0001
# An integer's trailing zeros are read as rounding, but never coarser than two significant digits:
# "350" matches 345-355 and "2,000" matches 1,950-2,050 (not 1,500-2,500).
MIN_SIGNIFICANT_DIGITS = 2
YEAR_RANGE = (1800, 2100)

# Unit spellings -> (canonical unit, dimension). Longest spellings are tried first.
UNITS: dict[str, tuple[str, str]] = {}
for _canonical, _dimension, _spellings in (
    ("km²", "area", ["km²", "km2", "km^2", "sq km", "square kilometres", "square kilometers", "sq. km"]),
    ("m²", "area", ["m²", "m2", "m^2", "sq m", "square metres", "square meters"]),
    ("ha", "area", ["ha", "hectares", "hectare"]),
    ("km", "length", ["km", "kilometres", "kilometers", "kilometre", "kilometer"]),
    ("mm", "length", ["mm", "millimetres", "millimeters", "millimetre", "millimeter"]),
    ("cm", "length", ["cm", "centimetres", "centimeters"]),
    ("m", "length", ["m", "metres", "meters", "metre", "meter", "m a.s.l.", "masl"]),
    ("%", "ratio", ["%", "percent", "per cent", "pct"]),
    ("fraction", "ratio", ["fraction"]),
    ("°C", "temperature", ["°C", "ºC", "° C", "degC", "deg C", "degrees Celsius", "celsius", "C"]),
    ("K", "temperature", ["K", "kelvin"]),
    ("°", "angle", ["°", "degrees", "deg"]),
):
    for _spelling in _spellings:
        UNITS[_spelling.lower()] = (_canonical, _dimension)

# Factors to the dimension's base unit (temperature is handled separately: it has an offset).
FACTORS = {
    "m": 1.0,
    "km": 1000.0,
    "mm": 0.001,
    "cm": 0.01,
    "m²": 1.0,
    "km²": 1e6,
    "ha": 1e4,
    "%": 0.01,
    "fraction": 1.0,
}
# Units a bare letter may stand for only in tool results (key suffixes, "units" fields), never in
# prose, where "C" or "K" after a number is too often something else.
AMBIGUOUS_IN_PROSE = {"c"}
KEY_SUFFIX_UNITS = {
    "m": "m",
    "km": "km",
    "mm": "mm",
    "m2": "m²",
    "km2": "km²",
    "ha": "ha",
    "pct": "%",
    "percent": "%",
    "percentage": "%",
    "fraction": "fraction",
    "ratio": "fraction",
    "share": "fraction",
    "c": "°C",
    "degc": "°C",
    "celsius": "°C",
    "k": "K",
    "kelvin": "K",
    "deg": "°",
}
UNIT_KEYS = ("units", "unit", "unit_of_measurement")
# Values under these keys are WGS 84 degrees: a coordinate never supports "36.8 m" (a small model
# readily reports the longitude it was given as the elevation it was asked for).
COORDINATE_KEYS = frozenset(
    {"lon", "lat", "longitude", "latitude", "point", "bbox", "coordinates", "center", "centre", "extent", "bounds"}
    | {"west", "south", "east", "north", "min_lon", "min_lat", "max_lon", "max_lat"}
)

_unit_alternatives = sorted(UNITS, key=len, reverse=True)
_UNIT = "|".join(re.escape(u) for u in _unit_alternatives)
# A number: thousands separators allowed, an optional leading minus written as - or U+2212.
NUMBER = re.compile(
    r"(?P<sign>[-\u2212])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<unit>" + _UNIT + r"))?",
    re.IGNORECASE,
)
MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
DATE_SPANS = [
    re.compile(r"\b\d{4}-\d{1,2}(?:-\d{1,2})?(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?\b"),
    re.compile(r"\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b"),
    re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"),
    re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTHS})\b\.?(?:\s+\d{{4}})?", re.IGNORECASE),
    re.compile(rf"\b(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?", re.IGNORECASE),
]
LIST_MARKER = re.compile(r"(?m)^[ \t]*(?:[-*][ \t]+)?\d{1,2}[.)](?=[ \t])")
# "fell by 63.4 %", "a decrease of 67.7 mm": a change of -63.4 % written as its size after a word
# of decrease (up to three words before the number).
DECREASE = re.compile(
    r"\b(?:fell|falls?|falling|decreas\w*|dropp?\w*|declin\w*|down|lower|less|reduc\w*|loss|lost|shr[iau]nk\w*)"
    r"\b(?:\s+[\w.-]+){0,3}\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FoundNumber:
    text: str
    value: float
    unit: str  # canonical unit, or "" when none follows
    start: int
    end: int
    decimals: int
    trailing_zeros: int


@dataclass(frozen=True)
class SourceNumber:
    value: float
    unit: str
    call_id: str
    tool_name: str


@dataclass
class CheckedNumber:
    number: FoundNumber
    supported: bool
    call_id: str = ""
    tool_name: str = ""
    source_value: float = 0.0
    match: str = ""


@dataclass
class GroundingReport:
    numbers: list[CheckedNumber] = field(default_factory=list)

    @property
    def supported_count(self) -> int:
        return sum(1 for n in self.numbers if n.supported)

    @property
    def unsupported_count(self) -> int:
        return sum(1 for n in self.numbers if not n.supported)


@dataclass(frozen=True)
class ToolResultText:
    call_id: str
    tool_name: str
    text: str


def canonical_unit(text: str) -> str:
    found = UNITS.get(text.strip().lower().replace("_", " "))
    return found[0] if found else ""


def dimension(unit: str) -> str:
    found = UNITS.get(unit.lower())
    return found[1] if found else ""


def _covered(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def extract_numbers(text: str, *, prose: bool = True) -> list[FoundNumber]:
    """Numbers of `text` with the unit that follows each. In prose, years, dates, times, list
    numbering and numbers inside identifiers ("Sentinel-2", "B04", "EPSG:4326") are skipped."""
    skipped: list[tuple[int, int]] = []
    if prose:
        for pattern in DATE_SPANS:
            skipped.extend(m.span() for m in pattern.finditer(text))
        skipped.extend(m.span() for m in LIST_MARKER.finditer(text))
    found = []
    for match in NUMBER.finditer(text):
        start = match.start()
        num_start = match.start("num")
        if prose and _covered(skipped, num_start, match.end("num")):
            continue
        before = text[num_start - 1] if num_start > 0 else ""
        if before and (before.isalnum() or before in "_.:/#"):
            continue  # part of an identifier, a version, a ratio or a path
        sign = match.group("sign")
        if sign and start > 0 and text[start - 1].isdigit():
            sign = None  # "5-10 m": a range dash, not a minus
        elif sign and start > 0 and (text[start - 1].isalpha() or text[start - 1] in "_-"):
            continue  # "Sentinel-2", "lux-dem-2": a hyphen inside a word, not a minus
        raw = match.group("num")
        unit_text = match.group("unit") or ""
        unit_end = match.end("unit") if unit_text else match.end("num")
        after = text[unit_end] if unit_end < len(text) else ""
        if unit_text and unit_text[-1].isalpha() and after.isalpha():
            # "5 mice", "3 months": the letters were the start of a word, not a unit.
            unit_text, unit_end = "", match.end("num")
            after = text[unit_end] if unit_end < len(text) else ""
        if unit_text and prose and unit_text.lower() in AMBIGUOUS_IN_PROSE:
            unit_text, unit_end = "", match.end("num")
            after = text[unit_end] if unit_end < len(text) else ""
        if not unit_text and after and (after.isalpha() or after == "_"):
            continue  # "2nd", "3D", "10x"
        if after == "." and unit_end + 1 < len(text) and text[unit_end + 1].isdigit():
            continue  # "1.2.3": a version
        value = float(raw.replace(",", ""))
        if sign:
            value = -value
        unit = canonical_unit(unit_text) if unit_text else ""
        is_year = (
            prose
            and not unit
            and "." not in raw
            and "," not in raw
            and len(raw) == 4
            and YEAR_RANGE[0] <= value <= YEAR_RANGE[1]
        )
        if is_year:
            continue
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        digits = raw.replace(",", "").split(".")[0]
        trailing = 0 if decimals else len(digits) - len(digits.rstrip("0"))
        trailing = max(0, min(trailing, len(digits.lstrip("0")) - MIN_SIGNIFICANT_DIGITS))
        text_start = start if sign else num_start
        found.append(FoundNumber(text[text_start:unit_end], value, unit, text_start, unit_end, decimals, trailing))
    return found


# Sources: every numeric value of the tool results.


def _key_unit(key: str) -> str:
    lowered = key.lower()
    if lowered in COORDINATE_KEYS:
        return "°"
    if lowered in KEY_SUFFIX_UNITS and lowered not in ("m", "k", "c"):
        return KEY_SUFFIX_UNITS[lowered]
    for separator in ("_", "-"):
        if separator in lowered:
            suffix = lowered.rsplit(separator, 1)[1]
            if suffix in KEY_SUFFIX_UNITS:
                return KEY_SUFFIX_UNITS[suffix]
    return ""


def _walk(value: Any, unit: str, key: str) -> Iterator[tuple[float, str]]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield float(value), _key_unit(key) or unit
    elif isinstance(value, str):
        for number in extract_numbers(value, prose=False):
            yield number.value, number.unit or _key_unit(key) or unit
    elif isinstance(value, dict):
        own = next((value[k] for k in UNIT_KEYS if isinstance(value.get(k), str)), None)
        inherited = canonical_unit(own) if own is not None else unit
        for child_key, child in value.items():
            if child_key in UNIT_KEYS:
                continue
            yield from _walk(child, inherited, str(child_key))
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, unit, key)


def source_numbers(results: list[ToolResultText]) -> list[SourceNumber]:
    """Every number of every tool result: JSON values walked (units from a sibling "units" field or
    a key suffix such as `area_km2`), numbers in text results read with the unit that follows."""
    out: list[SourceNumber] = []
    for result in results:
        try:
            data: Any = json.loads(result.text)
        except ValueError:
            data = result.text
        for value, unit in _walk(data, "", ""):
            out.append(SourceNumber(value, unit, result.call_id, result.tool_name))
    return out


# Matching.


def _tolerance(number: FoundNumber) -> float:
    step = 10.0 ** (-number.decimals) if number.decimals else 10.0**number.trailing_zeros
    return step / 2 + abs(number.value) * RELATIVE_TOLERANCE + 1e-9


def _convert(value: float, source_unit: str, target_unit: str) -> float | None:
    """`value` in `source_unit` expressed in `target_unit`; None when they measure different things."""
    if source_unit == target_unit:
        return value
    if dimension(source_unit) != dimension(target_unit) or not dimension(source_unit):
        return None
    if dimension(source_unit) == "temperature":
        return value - 273.15 if source_unit == "K" else value + 273.15
    if source_unit in FACTORS and target_unit in FACTORS:
        return value * FACTORS[source_unit] / FACTORS[target_unit]
    return None


MATCH_RANK = {"exact": 0, "rounded": 1, "converted": 2}


def _match(number: FoundNumber, source: SourceNumber) -> tuple[str, float] | None:
    """How `source` supports `number`, if it does: ("exact" | "rounded" | "converted a->b", value)."""
    tolerance = _tolerance(number)
    # Units must agree when both are known; a bare number may match a value of any unit.
    if not number.unit or not source.unit or number.unit == source.unit:
        if number.value == source.value:
            return "exact", source.value
        if abs(number.value - source.value) <= tolerance:
            return "rounded", source.value
        if number.unit or source.unit:
            return None
    elif dimension(number.unit) == dimension(source.unit) == "ratio" and abs(number.value - source.value) <= tolerance:
        # A share named by its key ("share", "ratio") may already be a percentage.
        return "rounded", source.value
    if number.unit and source.unit:
        converted = _convert(source.value, source.unit, number.unit)
        if converted is not None and abs(number.value - converted) <= tolerance:
            return f"converted {source.unit}->{number.unit}", source.value
    return None


def _best(number: FoundNumber, sources: list[SourceNumber]) -> tuple[str, SourceNumber] | None:
    best: tuple[int, str, SourceNumber] | None = None
    for source in sources:
        found = _match(number, source)
        if found is None:
            continue
        rank = MATCH_RANK[found[0].split(" ")[0]]
        if best is None or rank < best[0]:
            best = (rank, found[0], source)
            if rank == 0:
                break
    return (best[1], best[2]) if best else None


def check_answer(answer: str, results: list[ToolResultText], question: str = "", catalog: str = "") -> GroundingReport:
    """Check every number of `answer` against the run's tool `results`; numbers the user wrote in
    the `question` and numbers of the `catalog` the model was given (collection titles such as
    "Landsat 7", time ranges) count as given."""
    sources = source_numbers(results)
    given = [
        (kind, [SourceNumber(n.value, n.unit, "", "") for n in extract_numbers(text, prose=False)])
        for kind, text in (("question", question), ("catalog", catalog))
        if text
    ]
    report = GroundingReport()
    for number in extract_numbers(answer):
        from_tool = _best(number, sources)
        if from_tool is None and number.value > 0 and DECREASE.search(answer[max(0, number.start - 40) : number.start]):
            found = _best(replace(number, value=-number.value), sources)
            from_tool = (f"size of {found[0]}", found[1]) if found else None
        if from_tool is not None:
            kind, source = from_tool
            report.numbers.append(CheckedNumber(number, True, source.call_id, source.tool_name, source.value, kind))
            continue
        for kind, numbers in given:
            found = _best(number, numbers)
            if found is not None:
                report.numbers.append(CheckedNumber(number, True, source_value=found[1].value, match=kind))
                break
        else:
            report.numbers.append(CheckedNumber(number, False))
    return report
