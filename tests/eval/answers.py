"""Reading an answer: the numbers in it (with their units), unit conversion, refusals, grounding.

Numbers inside identifiers ("landsat7", "p95", "B4") and the parts of dates after the first
("1999-07" gives 1999 only) are not numbers of the answer. A minus sign counts only when it does not
join two words or numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from stacgis_common.answer import mentions

_NUMBER = re.compile(
    r"(?<![\w.\-−/])(?P<sign>[-−])?(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
)
# Units as written after a number; longest first so "km²" wins over "km" and "mm/month" over "mm".
_UNIT_WORDS: list[tuple[str, str]] = [
    (r"km²|km2|square kilomet(?:re|er)s?|sq\.? ?km", "km2"),
    (r"m²|m2|square met(?:re|er)s?", "m2"),
    (r"mm(?: ?/ ?| per )month|mm", "mm"),
    (r"cm", "cm"),
    (r"km|kilomet(?:re|er)s?", "km"),
    (r"ft|feet|foot", "ft"),
    (r"miles?|mi\b", "mi"),
    (r"°C|º C|° C|degC|deg ?C|degrees? C(?:elsius)?|℃|Celsius", "degC"),
    (r"°F|degF|degrees? F(?:ahrenheit)?|Fahrenheit", "degF"),
    (r"%|percent|per ?cent", "%"),
    (r"m|met(?:re|er)s?", "m"),
    (r"K\b|kelvin", "K"),
    (r"inch(?:es)?|in\b", "in"),
]
_UNIT = re.compile(r"\s?(" + "|".join(f"(?P<u{i}>{p})" for i, (p, _) in enumerate(_UNIT_WORDS)) + r")(?![A-Za-z²])")

# Linear conversions into a base unit per dimension: value_in_base = value * factor (+ offset).
_LINEAR: dict[str, tuple[str, float, float]] = {
    "m": ("length", 1.0, 0.0),
    "km": ("length", 1000.0, 0.0),
    "cm": ("length", 0.01, 0.0),
    "mm": ("length", 0.001, 0.0),
    "ft": ("length", 0.3048, 0.0),
    "mi": ("length", 1609.344, 0.0),
    "in": ("length", 0.0254, 0.0),
    "km2": ("area", 1.0, 0.0),
    "m2": ("area", 1e-6, 0.0),
    "degC": ("temperature", 1.0, 0.0),
    "K": ("temperature", 1.0, -273.15),
    "degF": ("temperature", 5 / 9, -32 * 5 / 9),
    "%": ("ratio", 0.01, 0.0),
    "fraction": ("ratio", 1.0, 0.0),
}
# How tasks spell their expected unit.
UNIT_ALIASES = {"mm/month": "mm", "metres": "m", "meters": "m", "percent": "%", "°C": "degC", "km²": "km2"}


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    unit: str | None
    start: int
    end: int
    # Digits after the decimal point, as written (the precision the answer claims).
    decimals: int = 0


def canonical_unit(unit: str | None) -> str | None:
    if unit is None:
        return None
    return UNIT_ALIASES.get(unit, unit)


def extract_numbers(text: str) -> list[Number]:
    """Every number of a text, in order, with the unit written right after it (if any)."""
    found: list[Number] = []
    for match in _NUMBER.finditer(text):
        digits = match.group("digits").replace(",", "")
        try:
            value = float(digits)
        except ValueError:
            continue
        if match.group("sign"):
            value = -value
        end = match.end()
        unit = None
        after = _UNIT.match(text, end)
        if after is not None:
            for index, (_, name) in enumerate(_UNIT_WORDS):
                if after.group(f"u{index}") is not None:
                    unit = name
                    break
            end = after.end()
        mantissa = digits.lower().split("e", 1)[0]
        decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
        found.append(Number(value, text[match.start() : end], unit, match.start(), end, decimals))
    return found


def convert(value: float, unit: str | None, target: str | None) -> float | None:
    """`value` in `unit` expressed in `target`; None when they measure different things.

    A number written without a unit is taken to be in the target unit already.
    """
    unit, target = canonical_unit(unit), canonical_unit(target)
    if unit is None or target is None or unit == target:
        return value
    if unit not in _LINEAR or target not in _LINEAR:
        return None
    dim_a, factor_a, offset_a = _LINEAR[unit]
    dim_b, factor_b, offset_b = _LINEAR[target]
    if dim_a != dim_b:
        return None
    base = value * factor_a + offset_a
    return (base - offset_b) / factor_b


@dataclass(frozen=True)
class Tolerance:
    rel: float = 0.0
    abs: float = 0.0

    def allows(self, got: float, expected: float) -> bool:
        return abs(got - expected) <= max(self.abs, self.rel * abs(expected)) + 1e-9


# A change written as a word and a size ("a decrease of 35.18 %", "fell by 12 mm", "35 % lower") is
# the negative number it names.
_FALL_BEFORE = re.compile(
    r"\b(?:decrease[sd]?|declined?|drop(?:ped)?|f[ae]ll(?:en)?|reduc(?:ed|tion)|los[st]|down)\b"
    r"(?:\s+(?:of|by))?(?:\s+(?:about|around|roughly|nearly|approximately|some))?\s*$",
    re.I,
)
_FALL_AFTER = re.compile(r"^\s*(?:lower|less|smaller|down|drier|colder|cooler)\b", re.I)


def _written_as_fall(text: str, number: Number) -> bool:
    return number.value > 0 and bool(
        _FALL_BEFORE.search(text[max(0, number.start - 40) : number.start]) or _FALL_AFTER.match(text[number.end :])
    )


def find_value(
    text: str, expected: float, unit: str | None, tolerance: Tolerance, *, exclude: Iterable[Number] = ()
) -> Number | None:
    """The first number of the answer that equals `expected` (in `unit`) within tolerance."""
    skip = {(n.start, n.end) for n in exclude}
    for number in extract_numbers(text):
        if (number.start, number.end) in skip:
            continue
        for candidate in _readings(number, unit, fall=_written_as_fall(text, number)):
            if tolerance.allows(candidate, expected):
                return number
    return None


def _readings(number: Number, unit: str | None, fall: bool = False) -> list[float]:
    values = (number.value, -number.value) if fall else (number.value,)
    readings = [c for c in (convert(v, number.unit, unit) for v in values) if c is not None]
    # A share written as a plain fraction ("0.42 of the area") for an expected percentage.
    if canonical_unit(unit) == "%" and number.unit is None and 0 <= number.value <= 1:
        readings.append(number.value * 100)
    return readings


# -- refusals -----------------------------------------------------------------------------


def names_missing(text: str, missing: Iterable[str]) -> list[str]:
    """Which of the missing things (any spelling given) the answer names."""
    return [term for term in missing if mentions(text, term)]


# -- grounding ----------------------------------------------------------------------------


def supported_by(number: Number, sources: Iterable[float]) -> bool:
    """True when some source value, rounded to the precision the answer wrote, gives the number
    (also after converting between units of one dimension: 0.348 km from 348 m)."""
    step = 10.0**-number.decimals
    # (value, rounding step) in every unit of the number's dimension.
    candidates = [(abs(number.value), step)]
    if number.unit is not None and number.unit in _LINEAR and number.value != 0:
        for other in _LINEAR:
            converted = convert(number.value, number.unit, other)
            if converted is not None and other != number.unit:
                candidates.append((abs(converted), step * abs(converted / number.value)))
    for source in sources:
        if not math.isfinite(source):
            continue
        for value, rounding in candidates:
            tolerance = max(rounding / 2, abs(value) * 1e-6) + 1e-9
            if abs(abs(source) - value) <= tolerance:
                return True
            # Percentages of a fraction the tool reported (0.4213 -> 42.1 %).
            if number.unit == "%" and abs(abs(source) * 100 - value) <= tolerance:
                return True
    return False


def unsupported_numbers(answer: str, question: str, tool_texts: Iterable[str]) -> list[Number]:
    """Numbers of the answer found neither in the question nor in any tool result of the run.

    The harness's own check, used when the `done` event carries no `grounding`.
    """
    sources = [n.value for n in extract_numbers(question)]
    for text in tool_texts:
        sources.extend(n.value for n in extract_numbers(text))
    return [n for n in extract_numbers(answer) if not supported_by(n, sources)]
