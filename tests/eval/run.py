"""`python -m tests.eval`: measure the agent of a running stack on the task suite.

Exit status: 0 when the run completed (and met --min-solvable / --min-refusals when given), 1 when
it completed below those thresholds, 2 when the harness could not measure: stack unreachable, HTTP
errors or broken event streams, an expectation that cannot be computed, a bad task file.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from .client import ChatClient, RunRecord, StackError
from .oracle import Expected, Oracle, OracleError
from .report import machine, markdown, summarize, write_markdown
from .scoring import TaskScore, score
from .scripted import ScriptedRules
from .tasks import TASKS_FILE, Task, TaskFileError, load_tasks, select

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASES = ("http://127.0.0.1:8080/api/v1", "http://127.0.0.1:8000/api/v1")
SCRIPTED_MODEL = "scripted"
# Run errors that say the stack failed, not the model: they make the harness exit 2 whatever the score.
STACK_ERROR_CODES = frozenset(
    {
        "orchestrator_unavailable",
        "orchestrator_disconnected",
        "run_lost",
        "gateway_shutdown",
        "internal",
        "tool_pool_unavailable",
        "model_unavailable",
        "bad_request",
    }
)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="public API root (default: the ingress at :8080, else the gateway at :8000)")
    parser.add_argument("--tasks", default="all", help="comma list of task ids, kinds or tags (e.g. smoke, refusal)")
    parser.add_argument("--tasks-file", type=Path, default=TASKS_FILE)
    parser.add_argument("--model-label", help="model name for the report (default: what /info reports)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per task (all its messages)")
    parser.add_argument(
        "--scripted",
        default="auto",
        help="install the tasks' scripted rules: auto (when /info reports the scripted model), on, off",
    )
    parser.add_argument("--model-server", default="http://127.0.0.1:11434", help="model server for scripted rules")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".local" / "data", help="raster demo data (STAC)")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".local" / "cache", help="vector source packages")
    parser.add_argument("--knowledge-dir", type=Path, default=ROOT)
    parser.add_argument("--results", type=Path, help="JSON result file (default .local/eval/results-<time>.json)")
    parser.add_argument("--report", type=Path, default=ROOT / "docs" / "eval.md", help="Markdown report to update")
    parser.add_argument("--no-report", action="store_true", help="write the JSON result only")
    parser.add_argument("--min-solvable", type=float, help="fail (exit 1) below this %% of solvable tasks right")
    parser.add_argument("--min-refusals", type=float, help="fail (exit 1) below this %% of due refusals")
    parser.add_argument("--list", action="store_true", help="list the selected tasks and exit")
    return parser.parse_args(argv)


async def find_stack(base_url: str | None) -> tuple[str, dict[str, Any]]:
    candidates = [base_url] if base_url else list(DEFAULT_BASES)
    problems = []
    for candidate in candidates:
        client = ChatClient(candidate, 10.0)
        try:
            return candidate, await client.info()
        except StackError as error:
            problems.append(str(error))
        finally:
            await client.aclose()
    raise StackError("no stack answers: " + "; ".join(problems) + " (start one with `make up`)")


def expectations(oracle: Oracle, tasks: list[Task]) -> dict[str, Expected]:
    """Every task's expected value, computed before any run so a broken oracle costs no model time."""
    out, problems = {}, []
    for task in tasks:
        try:
            out[task.id] = oracle.compute(task.expect)
        except OracleError as error:
            problems.append(f"{task.id}: {error}")
    if problems:
        raise OracleError("expected values could not be computed:\n  " + "\n  ".join(problems))
    return out


async def run_task(base_url: str, task: Task, timeout: float) -> tuple[RunRecord, list[RunRecord]]:
    """The task's setup messages and its question, as one new user, each in a new session."""
    client = ChatClient(base_url, timeout)
    deadline = time.monotonic() + timeout
    try:
        setup = []
        for message in task.setup:
            setup.append(await client.chat(message, max(1.0, deadline - time.monotonic())))
        return await client.chat(task.question, max(1.0, deadline - time.monotonic())), setup
    finally:
        await client.aclose()


async def evaluate(args: argparse.Namespace) -> int:
    tasks = select(load_tasks(args.tasks_file), args.tasks)
    if args.list:
        for task in tasks:
            print(f"{task.id:36} {task.kind:11} {task.question}")
        return 0
    base_url, info = await find_stack(args.base_url)
    model = args.model_label or str(info.get("model", "unknown"))
    say(f"eval: {len(tasks)} tasks against {base_url}, model {model}")
    oracle = Oracle(args.data_dir, args.cache_dir, args.knowledge_dir)
    expected = expectations(oracle, tasks)

    scripted = args.scripted == "on" or (args.scripted == "auto" and info.get("model") == SCRIPTED_MODEL)
    rules = ScriptedRules(args.model_server) if scripted else None
    if rules is not None:
        say(f"eval: scripted model: {rules.install(tasks)} rules installed on {args.model_server}")

    started = dt.datetime.now(dt.UTC)
    scores: list[TaskScore] = []
    records: list[dict[str, Any]] = []
    stack_errors: list[str] = []
    try:
        for number, task in enumerate(tasks, start=1):
            try:
                record, setup = await run_task(base_url, task, args.timeout)
            except StackError as error:
                stack_errors.append(f"{task.id}: {error}")
                say(f"[{number}/{len(tasks)}] {task.id}: STACK ERROR {error}")
                continue
            result = score(task, expected[task.id], record)
            for message in setup:
                if message.final is None or message.final.name != "done":
                    result.reasons.append(f"setup message did not complete: {message.message!r}")
            scores.append(result)
            if result.error_code in STACK_ERROR_CODES:
                stack_errors.append(f"{task.id}: the run ended with error {result.error_code}")
            records.append({"id": task.id, "run": record.to_json(), "setup": [s.to_json() for s in setup]})
            mark = "ok  " if result.passed else "FAIL"
            why = "" if result.passed else f"  ({'; '.join(result.reasons)[:300]})"
            say(f"[{number}/{len(tasks)}] {mark} {task.id} {result.seconds:.1f}s{why}")
    finally:
        if rules is not None:
            rules.remove()

    summary = summarize(scores)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    results_file = args.results or ROOT / ".local" / "eval" / f"results-{stamp}.json"
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "model": model,
        "provider": info.get("provider"),
        "base_url": base_url,
        "selection": args.tasks,
        "timeout_seconds": args.timeout,
        "scripted_rules": scripted,
        "machine": machine(),
        "results_file": str(results_file.relative_to(ROOT) if results_file.is_relative_to(ROOT) else results_file),
    }
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(
        json.dumps(
            {
                "meta": meta,
                "summary": summary,
                "stack_errors": stack_errors,
                "tasks": [s.to_json() for s in scores],
                "runs": records,
            },
            indent=1,
            ensure_ascii=False,
        )
    )
    if not args.no_report:
        write_markdown(args.report, markdown(meta, summary, scores))
    say(
        f"eval: solvable {summary['solvable_passed']}/{summary['solvable']} right "
        f"({summary['solvable_passed_pct']} %), refusals {summary['refusals_passed']}/{summary['refusal_tasks']} "
        f"({summary['refusals_passed_pct']} %), unsupported numbers {summary['unsupported_numbers']}, "
        f"errors {summary['errors'] or 'none'}, timeouts {summary['timeouts']}; results in {results_file}"
        + ("" if args.no_report else f", report in {args.report}")
    )
    if stack_errors:
        say("eval: the stack failed on " + str(len(stack_errors)) + " task(s):\n  " + "\n  ".join(stack_errors))
        return 2
    below = []
    if args.min_solvable is not None and (summary["solvable_passed_pct"] or 0.0) < args.min_solvable:
        below.append(f"solvable {summary['solvable_passed_pct']} % < {args.min_solvable} %")
    if args.min_refusals is not None and (summary["refusals_passed_pct"] or 0.0) < args.min_refusals:
        below.append(f"refusals {summary['refusals_passed_pct']} % < {args.min_refusals} %")
    if below:
        say("eval: below the required scores: " + "; ".join(below))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(evaluate(args))
    except (StackError, OracleError, TaskFileError) as error:
        say(f"eval: cannot measure: {error}")
        return 2
