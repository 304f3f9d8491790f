"""Scoring runs from recorded event lists: right, wrong, refused, failed, map and memory actions."""

from __future__ import annotations

import json
from typing import Any

from .client import Event, RunRecord
from .oracle import Expected
from .report import machine, markdown, summarize
from .scoring import repeated_calls, score
from .tasks import Task

MEAN = 350.1500285


def task(**fields: Any) -> Task:
    base: dict[str, Any] = {
        "id": "lux-mean",
        "kind": "place",
        "question": "What is the mean elevation of Luxembourg?",
        "tools": [["compute_zonal_stats"], ["get_raster_statistics"]],
        "expect": {"op": "zonal", "collection": "luxembourg-dem"},
        "unit": "m",
        "script": {"answer": "x"},
    }
    base.update(fields)
    return Task.model_validate(base)


def refusal_task() -> Task:
    return task(
        id="refuse-snow",
        kind="refusal",
        refuse=True,
        question="How much snow fell in Luxembourg in January 1999?",
        tools=[],
        missing=["snow"],
        expect={"op": "no_collection", "terms": ["snow"]},
        unit=None,
    )


def run(*events: tuple[str, dict[str, Any]], answer: str | None = None, **done: Any) -> RunRecord:
    record = RunRecord("q", seconds=1.5)
    record.events = [Event("session", {"sessionId": "s"})]
    record.events += [Event(name, payload) for name, payload in events]
    if answer is not None:
        record.events.append(Event("content", {"text": answer}))
        record.events.append(
            Event(
                "done",
                {
                    "content": answer,
                    "steps": 2,
                    "toolCalls": 1,
                    "finishReason": "completed",
                    "usage": {"inputTokens": "1200", "outputTokens": "40"},
                    **done,
                },
            )
        )
    return record


def zonal_call(mean: float = MEAN) -> list[tuple[str, dict[str, Any]]]:
    arguments = {"collection_id": "luxembourg-dem", "geometry": {"dataset": "countries", "id": "LUX"}}
    result = {"collection_id": "luxembourg-dem", "unit": "m", "statistics": {"mean": mean, "min": 141, "max": 547}}
    return [
        ("tool_start", {"callId": "c1", "toolName": "compute_zonal_stats", "arguments": arguments}),
        ("tool_result", {"callId": "c1", "toolName": "compute_zonal_stats", "result": json.dumps(result)}),
    ]


EXPECTED = Expected(MEAN, "m", detail="area-weighted mean")


def test_a_right_answer_scores_right() -> None:
    result = score(task(), EXPECTED, run(*zonal_call(), answer="The mean elevation of Luxembourg is 350.15 m."))
    assert result.passed and result.tools_ok and result.answer_ok, result.reasons
    assert result.found == "350.15 m"
    assert result.unsupported_numbers == [] and result.grounding_source == "harness"
    assert (result.steps, result.input_tokens, result.output_tokens) == (2, 1200, 40)
    assert result.finish_reason == "completed" and result.error_code is None


def test_an_answer_in_another_unit_within_tolerance_is_right() -> None:
    result = score(task(), EXPECTED, run(*zonal_call(), answer="About 0.35 km above sea level."))
    assert result.passed, result.reasons


def test_an_invented_number_is_wrong_and_unsupported() -> None:
    result = score(task(), EXPECTED, run(*zonal_call(), answer="Approximately 1,929 meters."))
    assert not result.passed and not result.answer_ok
    assert result.unsupported_numbers == ["1,929 meters"]


def test_the_right_number_without_the_right_tool_is_not_enough() -> None:
    search = ("tool_start", {"callId": "c1", "toolName": "search_knowledge", "arguments": {"query": "Luxembourg"}})
    result = score(task(), EXPECTED, run(search, answer="It is 350 m."))
    assert result.answer_ok and result.tools_ok is False and not result.passed


def test_refusing_a_solvable_task_fails() -> None:
    result = score(task(), EXPECTED, run(answer="There is no elevation data for Luxembourg, so I cannot answer."))
    assert not result.passed and result.refused


def test_a_run_ending_in_an_error_fails_with_its_code() -> None:
    record = run(*zonal_call())
    record.events.append(Event("error", {"code": "context_too_long", "message": "4570 > 4096"}))
    result = score(task(), EXPECTED, record)
    assert not result.passed and result.error_code == "context_too_long"
    assert any("context_too_long" in reason for reason in result.reasons)


def test_a_timed_out_run_fails() -> None:
    record = run(*zonal_call())
    record.timed_out = True
    result = score(task(), EXPECTED, record)
    assert not result.passed and result.timed_out and "timed out" in result.reasons


def test_a_right_refusal_scores_right() -> None:
    search = ("tool_start", {"callId": "c1", "toolName": "search_raster_collections", "arguments": {"query": "snow"}})
    found = ("tool_result", {"callId": "c1", "toolName": "search_raster_collections", "result": '{"count": 0}'})
    result = score(
        refusal_task(),
        Expected(),
        run(search, found, answer="There is no snow data in the catalog, so I cannot say how much fell in 1999."),
    )
    assert result.passed and result.refused and result.tools_ok is None, result.reasons


def test_a_refusal_must_name_what_is_missing_and_invent_nothing() -> None:
    vague = score(refusal_task(), Expected(), run(answer="I cannot answer that."))
    assert not vague.passed and "names none" in vague.reasons[0]
    invented = score(refusal_task(), Expected(), run(answer="There is no snow data; typically 12 cm fall."))
    assert not invented.passed and invented.unsupported_numbers == ["12 cm"]
    guessed = score(refusal_task(), Expected(), run(answer="About 12 cm of snow fell."))
    assert not guessed.passed and not guessed.refused


def test_the_done_events_grounding_is_used_when_present() -> None:
    grounding = {
        "numbers": [
            {"text": "350.15 m", "value": MEAN, "supported": True, "callId": "c1"},
            {"text": "12 %", "value": 12, "supported": False},
        ],
        "supportedCount": 1,
        "unsupportedCount": 1,
    }
    result = score(task(), EXPECTED, run(*zonal_call(), answer="350.15 m, 12 % of it forest.", grounding=grounding))
    assert result.grounding_source == "done" and result.unsupported_numbers == ["12 %"]


def test_repeated_identical_calls_are_counted() -> None:
    calls = zonal_call() + zonal_call() + zonal_call()
    assert repeated_calls(run(*calls)) == 2


def test_repeats_refused_by_the_orchestrator_are_counted() -> None:
    refused = ("tool_error", {"callId": "c9", "toolName": "compute_zonal_stats", "kind": "repeated_call"})
    assert repeated_calls(run(*zonal_call(), refused)) == 1
    assert repeated_calls(run(*zonal_call())) == 0


def map_task() -> Task:
    return task(
        id="zoom-nairobi",
        kind="map",
        question="Zoom to Nairobi",
        tools=[["zoom_to_location"]],
        expect={"op": "frontend", "name": "zoom_to_location", "tolerance_deg": 0.3},
        unit=None,
    )


def test_a_map_action_is_checked_against_the_places_coordinates() -> None:
    nairobi = Expected(lat=-1.28333, lon=36.81667)
    right = ("frontend_tool", {"callId": "c2", "name": "zoom_to_location", "arguments": {"lat": -1.28, "lon": 36.8}})
    assert score(map_task(), nairobi, run(right, answer="The map now shows Nairobi.")).passed
    # The sign slip a small model makes: the right tool, the wrong place.
    wrong = ("frontend_tool", {"callId": "c2", "name": "zoom_to_location", "arguments": {"lat": 1.28, "lon": 36.8}})
    result = score(map_task(), nairobi, run(wrong, answer="The map now shows Nairobi."))
    assert result.tools_ok and not result.passed


def test_a_layer_may_come_from_any_collection_the_task_lists_with_a_matching_expression() -> None:
    layer_task = task(
        id="show-precip",
        kind="map",
        question="Display the monthly precipitation of 1999 on the map.",
        tools=[["visualize_collection"]],
        expect={
            "op": "frontend",
            "name": "visualize_collection",
            "arguments": {"collection_id": ["bcsd-precipitation-1999", "bcsd-1999-cube"], "expression": [None, "pr"]},
        },
        unit=None,
    )

    def shown(**arguments: Any) -> RunRecord:
        command = ("frontend_tool", {"callId": "c2", "name": "visualize_collection", "arguments": arguments})
        return run(command, answer="Done.")

    expected = Expected(detail="visualize_collection")
    assert score(layer_task, expected, shown(collection_id="bcsd-precipitation-1999")).passed
    assert score(layer_task, expected, shown(collection_id="bcsd-1999-cube", expression="pr")).passed
    assert not score(layer_task, expected, shown(collection_id="bcsd-1999-cube", expression="tas")).passed
    assert not score(layer_task, expected, shown(collection_id="bcsd-temperature-1999")).passed


def test_a_memory_is_checked_in_what_was_saved() -> None:
    memory_task = task(
        id="remember",
        kind="memory",
        question="Remember that I prefer metres.",
        tools=[["add_memory"]],
        expect={"op": "memory", "terms": ["metres"]},
        unit=None,
    )
    expected = Expected(terms=("metres",))
    save = ("tool_start", {"callId": "m1", "toolName": "add_memory", "arguments": {"content": "I prefer metres"}})
    assert score(memory_task, expected, run(save, answer="Noted.")).passed
    failed = ("tool_error", {"callId": "m1", "toolName": "add_memory", "error": "down", "kind": "unavailable"})
    assert not score(memory_task, expected, run(save, failed, answer="Noted.")).passed


def test_the_summary_and_table_count_what_happened() -> None:
    scores = [
        score(task(), EXPECTED, run(*zonal_call(), answer="The mean elevation of Luxembourg is 350.15 m.")),
        score(task(id="lux-wrong"), EXPECTED, run(*zonal_call(), answer="Approximately 1,929 meters.")),
        score(refusal_task(), Expected(), run(answer="There is no snow data in the catalog.")),
    ]
    summary = summarize(scores)
    assert (summary["solvable"], summary["solvable_passed"], summary["solvable_passed_pct"]) == (2, 1, 50.0)
    assert (summary["refusal_tasks"], summary["refusals_passed_pct"]) == (1, 100.0)
    assert summary["unsupported_numbers"] == 1 and summary["by_kind"]["place"]["passed"] == 1
    meta = {
        "date": "2026-12-02 01:00 UTC",
        "model": "m",
        "provider": "p",
        "base_url": "u",
        "selection": "all",
        "machine": machine(),
        "results_file": "r.json",
    }
    table = markdown(meta, summary, scores)
    assert "model **m**" in table and f"{machine()['cores']} cores" in table
    assert "| lux-wrong | place | **no** |" in table
