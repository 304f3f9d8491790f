"""Scoring one run of one task from the events it produced."""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from stacgis_common.answer import is_refusal, mentions, refusal_phrases

from .answers import (
    canonical_unit,
    convert,
    extract_numbers,
    find_value,
    names_missing,
    unsupported_numbers,
)
from .client import RunRecord
from .oracle import Expected
from .tasks import Task


@dataclass
class TaskScore:
    id: str
    kind: str
    passed: bool
    # None where it does not apply (a refusal needs no particular tool).
    tools_ok: bool | None
    answer_ok: bool
    refused: bool
    tools_called: list[str]
    expected: str
    found: str | None
    unsupported_numbers: list[str]
    # "done": the orchestrator's own check in the done event; "harness": this harness's fallback.
    grounding_source: str
    steps: int
    tool_calls: int
    tool_errors: int
    repeated_calls: int
    seconds: float
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    error_code: str | None
    timed_out: bool
    answer: str
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _int(value: Any) -> int:
    try:
        return int(value)  # int64 fields arrive as strings in proto3 JSON
    except (TypeError, ValueError):
        return 0


def tools_called(record: RunRecord) -> list[str]:
    """Names of the tools the run called, in order (MCP tools and frontend tools)."""
    names = []
    for event in record.events:
        if event.name == "tool_start":
            names.append(str(event.payload.get("toolName", "")))
        elif event.name == "frontend_tool":
            names.append(str(event.payload.get("name", "")))
    return names


def repeated_calls(record: RunRecord) -> int:
    """Attempts to repeat a call: ones the orchestrator refused as repeats (it never runs them twice),
    plus calls identical (tool and arguments) to the call just before them that did run."""
    calls = [
        (e.payload.get("toolName"), json.dumps(e.payload.get("arguments", {}), sort_keys=True))
        for e in record.events
        if e.name == "tool_start"
    ]
    refused = sum(1 for p in record.of("tool_error") if p.get("kind") == "repeated_call")
    return refused + sum(1 for before, after in itertools.pairwise(calls) if before == after)


def tool_texts(record: RunRecord) -> list[str]:
    """What the model read from tools: results, errors and frontend acknowledgements."""
    texts = [str(p.get("result", "")) for p in record.of("tool_result")]
    texts += [str(p.get("error", "")) for p in record.of("tool_error")]
    texts += [json.dumps(p.get("arguments", {})) for p in record.of("frontend_tool")]
    return texts


def _grounding(record: RunRecord, question: str) -> tuple[list[str], str]:
    final = record.final
    if final is not None and final.name == "done" and isinstance(final.payload.get("grounding"), dict):
        numbers = final.payload["grounding"].get("numbers", [])
        return [str(n.get("text", n.get("value"))) for n in numbers if not n.get("supported", False)], "done"
    return [n.text for n in unsupported_numbers(record.answer, question, tool_texts(record))], "harness"


def _check_frontend(task: Task, expected: Expected, record: RunRecord) -> tuple[bool, str | None]:
    spec = task.expect
    for command in record.of("frontend_tool"):
        if command.get("name") != spec["name"]:
            continue
        arguments = command.get("arguments", {})
        if expected.lat is not None and expected.lon is not None:
            tolerance = float(spec.get("tolerance_deg", 0.5))
            lat, lon = arguments.get("lat"), arguments.get("lon")
            if (
                isinstance(lat, (int, float))
                and isinstance(lon, (int, float))
                and abs(lat - expected.lat) <= tolerance
                and abs(lon - expected.lon) <= tolerance
            ):
                return True, f"{spec['name']} lat {lat} lon {lon}"
            continue
        wanted = spec.get("arguments", {})
        # A list is the values any of which is right (the same data in several collections).
        if all(arguments.get(key) in (value if isinstance(value, list) else [value]) for key, value in wanted.items()):
            return True, f"{spec['name']} {json.dumps(arguments)}"
    return False, None


def _check_memory(expected: Expected, record: RunRecord) -> tuple[bool, str | None]:
    saves = [s for s in record.of("tool_start") if s.get("toolName") == "add_memory"]
    failed = {e.get("callId") for e in record.of("tool_error") if e.get("toolName") == "add_memory"}
    for save in saves:
        content = str(save.get("arguments", {}).get("content", ""))
        if save.get("callId") not in failed and all(mentions(content, t) for t in expected.terms):
            return True, content
    return False, None


def _check_answer(task: Task, expected: Expected, record: RunRecord) -> tuple[bool, str | None]:
    op = task.expect["op"]
    if op == "frontend":
        return _check_frontend(task, expected, record)
    if op == "memory":
        return _check_memory(expected, record)
    answer = record.answer
    if isinstance(expected.value, float):
        target = expected.value
        if task.unit is not None and expected.unit is not None:
            converted = convert(target, canonical_unit(expected.unit), task.unit)
            if converted is None:
                return False, f"(expected unit {expected.unit} does not convert to {task.unit})"
            target = converted
        hit = find_value(answer, target, task.unit, task.tol)
        return hit is not None, hit.text if hit else None
    if expected.terms:
        missing = [t for t in expected.terms if not mentions(answer, t)]
        return not missing, ", ".join(t for t in expected.terms if t not in missing) or None
    return False, None


def describe_expected(task: Task, expected: Expected) -> str:
    if task.refuse:
        return f"a refusal naming one of {task.missing} ({expected.detail})"
    if isinstance(expected.value, float):
        target = expected.value
        if task.unit is not None and expected.unit is not None:
            target = convert(target, canonical_unit(expected.unit), task.unit) or target
        tol = task.tolerance
        allowed = " or ".join(
            part for part in (f"{tol.rel * 100:g} %" if tol.rel else "", f"{tol.abs:g}" if tol.abs else "") if part
        )
        return f"{target:.6g} {task.unit or ''} ±{allowed or 0} ({expected.detail})"
    if expected.lat is not None:
        return f"{task.expect['name']} near lat {expected.lat:.4f} lon {expected.lon:.4f}"
    if expected.terms:
        return f"mentions {list(expected.terms)}"
    return expected.detail


def score(task: Task, expected: Expected, record: RunRecord) -> TaskScore:
    final = record.final
    done = final.payload if final is not None and final.name == "done" else {}
    error = final.payload if final is not None and final.name == "error" else {}
    called = tools_called(record)
    answer = record.answer
    unsupported, grounding_source = _grounding(record, task.question)
    refused = is_refusal(answer)
    reasons: list[str] = []

    if task.refuse:
        tools_ok = None
        named = names_missing(answer, task.missing)
        answer_ok = refused and bool(named) and not unsupported
        found = "; ".join(refusal_phrases(answer)[:3]) or None
        if not refused:
            reasons.append("no refusal")
        elif not named:
            reasons.append(f"the refusal names none of {task.missing}")
        if unsupported:
            reasons.append(f"numbers not from the data: {unsupported}")
    else:
        tools_ok = any(set(alternative) <= set(called) for alternative in task.tools)
        if not tools_ok:
            reasons.append(f"tools {called} match none of {task.tools}")
        answer_ok, found = _check_answer(task, expected, record)
        if not answer_ok:
            numbers = [n.text for n in extract_numbers(answer)][:6]
            reasons.append(f"expected {describe_expected(task, expected)}; the answer has {numbers or 'no numbers'}")
    if final is None:
        reasons.append("timed out" if record.timed_out else "the run did not end")
    elif final.name == "error":
        reasons.append(f"error {error.get('code')}: {str(error.get('message', ''))[:200]}")
    passed = final is not None and final.name == "done" and answer_ok and tools_ok is not False
    usage = done.get("usage", {}) if isinstance(done.get("usage"), dict) else {}
    return TaskScore(
        id=task.id,
        kind=task.kind,
        passed=passed,
        tools_ok=tools_ok,
        answer_ok=answer_ok,
        refused=refused,
        tools_called=called,
        expected=describe_expected(task, expected),
        found=found,
        unsupported_numbers=unsupported,
        grounding_source=grounding_source,
        steps=_int(done.get("steps")),
        tool_calls=_int(done.get("toolCalls")) or len(called),
        tool_errors=len(record.of("tool_error")),
        repeated_calls=repeated_calls(record),
        seconds=round(record.seconds, 2),
        input_tokens=_int(usage.get("inputTokens")),
        output_tokens=_int(usage.get("outputTokens")),
        finish_reason=done.get("finishReason") if done else None,
        error_code=str(error.get("code")) if error else None,
        timed_out=record.timed_out,
        answer=answer[:2000],
        reasons=reasons,
    )
