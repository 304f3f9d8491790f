"""Grounding of an answer's numbers, tool results shaped for small windows, the token budget."""

from __future__ import annotations

import json

import pytest

from stacgis_orchestrator.context_window import ModelBudget, estimate_tokens, parse_overflow
from stacgis_orchestrator.grounding import ToolResultText, check_answer, extract_numbers
from stacgis_orchestrator.llm.types import Message
from stacgis_orchestrator.result_shaping import shape_result

STATS = {
    "collection_id": "lux-dem",
    "mean": 347.6,
    "min": 151.25,
    "max": 559.3,
    "units": "m",
    "area_km2": 2586.4,
    "valid_fraction": 0.3524,
}
TEMPERATURE = {"variable": "tas", "value": 285.35, "units": "K"}


def results() -> list[ToolResultText]:
    return [
        ToolResultText("call_stats", "get_raster_statistics", json.dumps(STATS)),
        ToolResultText("call_temp", "query_raster_point", json.dumps(TEMPERATURE)),
        ToolResultText("call_text", "search_knowledge", "The DEM has a resolution of 90 m and 12 bands."),
    ]


def by_text(answer: str, question: str = "") -> dict[str, object]:
    report = check_answer(answer, results(), question)
    for checked in report.numbers:
        # Offsets are code points into the answer and cover exactly the reported text.
        assert answer[checked.number.start : checked.number.end] == checked.number.text
    return {c.number.text: c for c in report.numbers}


def test_exact_and_rounded_numbers_are_supported_with_their_source() -> None:
    numbers = by_text(f"The mean elevation is {STATS['mean']} m; rounded, {round(STATS['mean'])} m.")
    exact = numbers["347.6 m"]
    rounded = numbers[f"{round(STATS['mean'])} m"]
    assert exact.supported and exact.match == "exact" and exact.call_id == "call_stats"  # type: ignore[attr-defined]
    assert rounded.supported and rounded.match == "rounded"  # type: ignore[attr-defined]
    assert rounded.tool_name == "get_raster_statistics" and rounded.source_value == STATS["mean"]  # type: ignore[attr-defined]


def test_invented_numbers_are_unsupported() -> None:
    report = check_answer("The mean elevation is approximately 1,929 meters.", results())
    assert [(n.number.text, n.number.value, n.number.unit, n.supported) for n in report.numbers] == [
        ("1,929 meters", 1929.0, "m", False)
    ]
    assert (report.supported_count, report.unsupported_count) == (0, 1)


@pytest.mark.parametrize(
    ("written", "supported"),
    [
        ("348", True),  # 347.6 rounded to units
        ("347.6", True),
        ("347.5", False),  # one decimal written: 347.6 does not round to 347.5
        ("350", True),  # trailing zero: rounded to tens
        ("340", False),
        ("300", False),  # at least two significant digits are assumed, so 300 means 295-305
        ("346", False),
    ],
)
def test_rounding_follows_the_written_precision(written: str, supported: bool) -> None:
    report = check_answer(f"About {written} m.", results())
    assert [n.supported for n in report.numbers] == [supported]


def test_unit_conversions_where_the_tool_reported_the_unit() -> None:
    max_km = round(STATS["max"] / 1000, 2)  # type: ignore[operator]
    area_ha = round(STATS["area_km2"] * 100)  # type: ignore[operator]
    share = round(STATS["valid_fraction"] * 100, 1)  # type: ignore[operator]
    celsius = round(TEMPERATURE["value"] - 273.15, 1)  # type: ignore[operator]
    answer = f"Highest point {max_km} km, area {area_ha:,} ha, {share}% valid, {celsius} °C."
    numbers = by_text(answer)
    assert numbers[f"{max_km} km"].match == "converted m->km"  # type: ignore[attr-defined]
    assert numbers[f"{area_ha:,} ha"].match == "converted km²->ha"  # type: ignore[attr-defined]
    assert numbers[f"{share}%"].match == "converted fraction->%"  # type: ignore[attr-defined]
    assert numbers[f"{celsius} °C"].match == "converted K->°C"  # type: ignore[attr-defined]
    assert all(n.supported for n in numbers.values())  # type: ignore[attr-defined]
    # A unit of another kind never matches, even with the same value.
    assert [n.supported for n in check_answer(f"{STATS['mean']} °C", results()).numbers] == [False]


def test_a_decrease_written_as_its_size_is_supported() -> None:
    change = {"change": -67.7163, "change_percent": -63.42, "unit": "mm/month"}
    source = [ToolResultText("call_change", "detect_change", json.dumps(change))]
    answer = "Precipitation fell by 67.7 mm/month, a drop of 63.42 %; it rose by 63.42 % elsewhere."
    checked = [(n.number.text, n.supported, n.match) for n in check_answer(answer, source).numbers]
    assert checked == [
        ("67.7 mm", True, "size of rounded"),
        ("63.42 %", True, "size of exact"),
        ("63.42 %", False, ""),  # a rise is not the size of a fall
    ]


def test_numbers_in_text_results_and_in_the_question() -> None:
    numbers = by_text("At 90 m resolution; you asked about 7 km around it.", question="what within 7 km?")
    assert numbers["90 m"].supported and numbers["90 m"].call_id == "call_text"  # type: ignore[attr-defined]
    assert numbers["7 km"].supported and numbers["7 km"].match == "question"  # type: ignore[attr-defined]


def test_numbers_of_the_catalogue_the_model_was_given_count_as_given() -> None:
    catalog = "- landsat-ndvi: Landsat 7 NDVI, Olinda (Brazil)"
    report = check_answer("Landsat 7 shows 0.41 here.", results(), catalog=catalog)
    assert [(n.number.text, n.supported, n.match) for n in report.numbers] == [
        ("7", True, "catalog"),
        ("0.41", False, ""),
    ]


def test_a_coordinate_does_not_support_a_length() -> None:
    # Seen with the embedded model: a point outside the collection, and the longitude reported as the elevation.
    outside = {"place": {"name": "Nairobi", "point": [36.81667, -1.28333]}, "lon": 36.81667, "lat": -1.28333}
    sources = [ToolResultText("call_pt", "query_raster_point", json.dumps(outside))]
    checked = check_answer("The elevation of Nairobi is 36.81667 meters.", sources).numbers
    assert [(c.number.text, c.supported) for c in checked] == [("36.81667 meters", False)]
    # Written as a coordinate (bare or in degrees) it is still supported by the same value.
    checked = check_answer("Nairobi lies at longitude 36.81667, latitude -1.28333°.", sources).numbers
    assert [c.supported for c in checked] == [True, True]


def test_years_dates_times_list_numbers_and_identifiers_are_not_checked() -> None:
    answer = (
        "1. In 2023 (on 2023-05-01 at 12:30, or 5 June 1999) Sentinel-2 band B04 in EPSG:4326 said:\n"
        "2) nothing for the 2nd time in 3D.\n- 3. done"
    )
    assert extract_numbers(answer) == []
    assert [n.text for n in extract_numbers("From 5-10 m, then -3.5 °C")] == ["5", "10 m", "-3.5 °C"]


def test_json_results_are_shaped_as_json_with_counts() -> None:
    data = {"collection": "lux-dem", "count": 500, "items": [{"id": i, "value": i * 1.5} for i in range(500)]}
    text = json.dumps(data)
    shaped, changed = shape_result(text, 1000)
    assert changed and len(shaped) <= 1000
    parsed = json.loads(shaped)  # still valid JSON
    assert parsed["collection"] == "lux-dem" and parsed["count"] == 500
    kept = [item for item in parsed["items"] if isinstance(item, dict)]
    assert kept and kept[0] == {"id": 0, "value": 0.0}
    assert parsed["items"][-1] == f"... {500 - len(kept)} more items not shown"
    assert "shortened from" in parsed["_shaped"]
    # Text is cut with a notice; short results pass unchanged.
    cut, changed = shape_result("x" * 5000, 1000)
    assert changed and cut.startswith("x" * 1000) and "first 1000 of 5000" in cut
    assert shape_result(text[:50], 1000) == (text[:50], False)


def test_overflow_messages_and_calibration() -> None:
    assert parse_overflow("the prompt is 4570 tokens, more than the context window of 4096 (options.num_ctx)") == (
        4570,
        4096,
    )
    assert parse_overflow("something else") is None
    budget = ModelBudget(8192)
    messages = [Message("system", "s" * 3500)]
    estimate = estimate_tokens(messages, [])
    budget.calibrate("m", estimate, estimate * 2)
    assert budget.ratio("m") == pytest.approx(2.0)
    assert estimate_tokens(messages, [], budget.ratio("m")) == pytest.approx(2 * estimate, abs=1)
    budget.calibrate("m", estimate, estimate // 10)  # a count of only the uncached tokens is not believed
    assert budget.ratio("m") == pytest.approx(2.0)
    budget.learn_window("m", 4096)
    budget.learn_window("m", 32768)  # never above the setting
    assert (budget.window("m"), budget.window("other")) == (4096, 8192)
