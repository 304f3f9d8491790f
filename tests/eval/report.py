"""Summaries of an eval run: figures per kind and overall, the JSON result and the Markdown table."""

from __future__ import annotations

import os
import platform
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from .scoring import TaskScore
from .tasks import KINDS

START = "<!-- eval-results:start -->"
END = "<!-- eval-results:end -->"


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    memory_gb = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "memory_gb": memory_gb, "system": platform.platform(terse=True)}


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def summarize(scores: list[TaskScore]) -> dict[str, Any]:
    solvable = [s for s in scores if s.kind != "refusal"]
    refusals = [s for s in scores if s.kind == "refusal"]
    times = [s.seconds for s in scores]
    errors = Counter(s.error_code for s in scores if s.error_code)
    finish = Counter(s.finish_reason for s in scores if s.finish_reason)
    by_kind = {}
    for kind in KINDS:
        group = [s for s in scores if s.kind == kind]
        if group:
            by_kind[kind] = {
                "tasks": len(group),
                "passed": sum(s.passed for s in group),
                "passed_pct": _pct(sum(s.passed for s in group), len(group)),
                "tools_ok_pct": _pct(sum(bool(s.tools_ok) for s in group), len(group)) if kind != "refusal" else None,
                "unsupported_numbers": sum(len(s.unsupported_numbers) for s in group),
                "median_seconds": round(statistics.median(s.seconds for s in group), 2),
            }
    return {
        "tasks": len(scores),
        "solvable": len(solvable),
        "solvable_passed": sum(s.passed for s in solvable),
        "solvable_passed_pct": _pct(sum(s.passed for s in solvable), len(solvable)),
        "solvable_tools_ok_pct": _pct(sum(bool(s.tools_ok) for s in solvable), len(solvable)),
        "solvable_answer_ok_pct": _pct(sum(s.answer_ok for s in solvable), len(solvable)),
        "false_refusals": sum(s.refused and not s.answer_ok for s in solvable),
        "refusal_tasks": len(refusals),
        "refusals_passed": sum(s.passed for s in refusals),
        "refusals_passed_pct": _pct(sum(s.passed for s in refusals), len(refusals)),
        "unsupported_numbers": sum(len(s.unsupported_numbers) for s in scores),
        "tasks_with_unsupported_numbers": sum(bool(s.unsupported_numbers) for s in scores),
        "grounding_from_done_event": sum(s.grounding_source == "done" for s in scores),
        "grounding_from_harness": sum(s.grounding_source == "harness" for s in scores),
        "errors": dict(errors),
        "context_too_long": errors.get("context_too_long", 0),
        "step_budget": finish.get("step_budget", 0),
        "repeated_calls": sum(s.repeated_calls for s in scores),
        "timeouts": sum(s.timed_out for s in scores),
        "tool_errors": sum(s.tool_errors for s in scores),
        "finish_reasons": dict(finish),
        "mean_steps": round(statistics.mean(s.steps for s in scores), 2) if scores else None,
        "median_seconds": round(statistics.median(times), 2) if times else None,
        "max_seconds": round(max(times), 2) if times else None,
        "input_tokens": sum(s.input_tokens for s in scores),
        "output_tokens": sum(s.output_tokens for s in scores),
        "by_kind": by_kind,
    }


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _fmt_pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f} %"


def markdown(meta: dict[str, Any], summary: dict[str, Any], scores: list[TaskScore]) -> str:
    m = meta["machine"]
    lines = [
        f"Run of {meta['date']}: model **{meta['model']}** ({meta.get('provider') or 'provider not reported'}) "
        f"through {meta['base_url']}, tasks `{meta['selection']}`; machine: {m['cores']} cores, {m['cpu']}, "
        f"{m['memory_gb']} GB RAM. Raw results: `{meta['results_file']}`.",
        "",
        "| overall | |",
        "|---|---|",
        f"| solvable tasks right | {summary['solvable_passed']}/{summary['solvable']} "
        f"({_fmt_pct(summary['solvable_passed_pct'])}); right tools {_fmt_pct(summary['solvable_tools_ok_pct'])}, "
        f"right answer {_fmt_pct(summary['solvable_answer_ok_pct'])}, false refusals {summary['false_refusals']} |",
        f"| unanswerable tasks refused | {summary['refusals_passed']}/{summary['refusal_tasks']} "
        f"({_fmt_pct(summary['refusals_passed_pct'])}) |",
        f"| unsupported numbers | {summary['unsupported_numbers']} in {summary['tasks_with_unsupported_numbers']} "
        f"answers (grounding from the done event: {summary['grounding_from_done_event']} runs, "
        f"harness fallback: {summary['grounding_from_harness']}) |",
        f"| run errors | {summary['errors'] or 'none'}; context_too_long {summary['context_too_long']}, "
        f"step budget {summary['step_budget']}, repeated calls {summary['repeated_calls']}, "
        f"timeouts {summary['timeouts']}, tool errors {summary['tool_errors']} |",
        f"| time per task | median {summary['median_seconds']} s, max {summary['max_seconds']} s; "
        f"mean steps {summary['mean_steps']} |",
        f"| tokens | {summary['input_tokens']} in, {summary['output_tokens']} out |",
        "",
        "| kind | tasks | right | right tools | unsupported numbers | median s |",
        "|---|---|---|---|---|---|",
    ]
    for kind, row in summary["by_kind"].items():
        lines.append(
            f"| {kind} | {row['tasks']} | {row['passed']} ({_fmt_pct(row['passed_pct'])}) | "
            f"{_fmt_pct(row['tools_ok_pct'])} | {row['unsupported_numbers']} | {row['median_seconds']} |"
        )
    lines += [
        "",
        "| task | kind | right | tools | expected | found | unsupported | steps | s | tokens in/out | end |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        end = s.finish_reason or s.error_code or ("timeout" if s.timed_out else "?")
        tools = "–" if s.tools_ok is None else ("yes" if s.tools_ok else "no")
        lines.append(
            "| "
            + " | ".join(
                _cell(v)
                for v in (
                    s.id,
                    s.kind,
                    "yes" if s.passed else "**no**",
                    f"{tools}: {', '.join(s.tools_called) or 'none'}",
                    s.expected[:90],
                    (s.found or "")[:60],
                    len(s.unsupported_numbers),
                    s.steps,
                    s.seconds,
                    f"{s.input_tokens}/{s.output_tokens}",
                    end,
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, section: str) -> None:
    """Replace the results section of `path` (between the markers), or append one."""
    block = f"{START}\n{section}{END}\n"
    text = path.read_text() if path.exists() else "# Eval results\n\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail.lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
