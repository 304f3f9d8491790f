"""Reading answers: numbers and units, conversions, refusals, grounding against tool results."""

from __future__ import annotations

import pytest

from stacgis_common.answer import is_refusal, mentions

from .answers import (
    Tolerance,
    convert,
    extract_numbers,
    find_value,
    names_missing,
    supported_by,
    unsupported_numbers,
)


def values(text: str) -> list[float]:
    return [n.value for n in extract_numbers(text)]


def test_numbers_with_separators_signs_and_exponents() -> None:
    assert values("The mean is 1,234.5 m, the minimum −3.25 °C and the maximum -7.") == [1234.5, -3.25, -7.0]
    assert values("about 2.5e3 mm") == [2500.0]
    assert values("(-0.75 at sea)") == [-0.75]


def test_identifiers_and_date_parts_are_not_numbers() -> None:
    # Collection ids, band names, percentile keys and the month of a date carry no answer value.
    assert values("landsat7-olinda band B4, p95, e2e") == []
    assert values("in 1999-07 the value was 12") == [1999.0, 12.0]
    assert values("PM2.5 levels") == []


def test_units_after_numbers() -> None:
    found = {n.value: n.unit for n in extract_numbers("348 m, 0.35 km, 1142 ft, 7.1 °C, 280 K, 45.1 %, 150 mm/month")}
    assert found == {348.0: "m", 0.35: "km", 1142.0: "ft", 7.1: "degC", 280.0: "K", 45.1: "%", 150.0: "mm"}
    assert extract_numbers("12 metres")[0].unit == "m"
    # A unit glued to a word is not a unit.
    assert extract_numbers("3 months")[0].unit is None


def test_conversions_within_a_dimension_only() -> None:
    assert convert(0.348, "km", "m") == pytest.approx(348.0)
    assert convert(1000, "ft", "m") == pytest.approx(304.8)
    assert convert(280.15, "K", "degC") == pytest.approx(7.0)
    assert convert(50, "degF", "degC") == pytest.approx(10.0)
    assert convert(45.0, "%", "fraction") == pytest.approx(0.45)
    assert convert(12.0, None, "m") == 12.0  # no unit written: taken as the expected one
    assert convert(12.0, "km", "degC") is None


def test_find_value_converts_and_respects_tolerance() -> None:
    tolerance = Tolerance(rel=0.02)
    hit = find_value("The mean elevation is 0.35 km.", 348.0, "m", tolerance)
    assert hit is not None and hit.unit == "km"
    assert find_value("The mean elevation is 1,929 meters.", 348.0, "m", tolerance) is None
    # A share written as a fraction for an expected percentage.
    assert find_value("a fraction of 0.4506 of the island", 45.06, "%", Tolerance(abs=1)) is not None
    assert find_value("roughly 45 %", 45.06, "%", Tolerance(abs=1)) is not None
    assert find_value("It is 45 km away", 45.06, "%", Tolerance(abs=1)) is None


@pytest.mark.parametrize(
    "text",
    [
        # Eval run 18's answer to "By what percentage did mean precipitation change ...?"
        "changed by -54.9925 mm/month, which is a fall, representing a decrease of 35.18%.",
        "Precipitation fell by 35.2 % from January to July.",
        "July was 35.18 % lower than January.",
        "It changed by -35.18 %.",
    ],
)
def test_a_change_written_as_a_fall_is_the_negative_number(text: str) -> None:
    assert find_value(text, -35.18, "%", Tolerance(abs=2)) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Precipitation rose by 35.18 %.",
        "It fell from 35.18 % to 20 %.",  # the level it fell from, not the change
        "an increase of 35.18%",
    ],
)
def test_a_number_not_written_as_a_fall_keeps_its_sign(text: str) -> None:
    assert find_value(text, -35.18, "%", Tolerance(abs=2)) is None


@pytest.mark.parametrize(
    "text",
    [
        "There is no snowfall data in the catalog, so I cannot answer that.",
        "None of the elevation models covers Nairobi.",
        "The precipitation data does not cover 2005.",
        "I can't answer this: the collection has no humidity band.",
        "Sorry, Tokyo is outside the extent of the temperature data.",
        "The air temperature data only covers the south-eastern United States.",
        "The catalogue holds no sea ice data for 2020.",
    ],
)
def test_refusals_are_recognised(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "The mean elevation of Luxembourg is 350.2 m.",
        "In July 1999 148.8 mm of precipitation fell there.",
        "The map now shows Nairobi.",
        "There was no rain in the south in July, but 30 mm fell in the north.",
    ],
)
def test_answers_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)


def test_names_missing_is_case_insensitive() -> None:
    assert names_missing("No PM2.5 data for Berlin.", ["pm2.5", "pollution"]) == ["pm2.5"]
    assert names_missing("No data.", ["snow"]) == []


def test_grounding_allows_rounding_and_unit_conversion_only() -> None:
    tool = '{"statistics": {"mean": 350.150028, "max": 547}, "fraction": 0.4506}'
    sources = [n.value for n in extract_numbers(tool)]
    assert supported_by(extract_numbers("350.15 m")[0], sources)
    assert supported_by(extract_numbers("350 m")[0], sources)
    assert supported_by(extract_numbers("0.35 km")[0], sources)
    assert supported_by(extract_numbers("45.1 %")[0], sources)
    # Rounded the wrong way, or a number that is nowhere in the results.
    assert not supported_by(extract_numbers("350.1 m")[0], sources)
    assert not supported_by(extract_numbers("1929 m")[0], sources)


def test_unsupported_numbers_exclude_the_question() -> None:
    answer = "The data does not cover 2005; in 1999 the mean was 87.3 mm and about 1,929 m."
    unsupported = unsupported_numbers(answer, "Rain in 2005?", ['{"time": "1999-01", "mean": 87.31}'])
    assert [n.text for n in unsupported] == ["1,929 m"]


def test_terms_match_any_spelling_whatever_the_hyphens() -> None:
    assert mentions("It uses the near-infrared and red bands.", "near infrared|NIR")
    assert mentions("NIR minus red over NIR plus red", "near infrared|NIR")
    assert not mentions("It uses the green band.", "near infrared|NIR")
