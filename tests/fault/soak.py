"""A soak of the fault suite's private stack: a few browsers chat for a bounded time and request count
while the supervised model server, Redis and Postgres are SIGKILLed in turn; nothing repairs them but
their supervisor.

    .venv/bin/python tests/fault/soak.py --minutes 60 --users 4 --max-runs 5000 --kill-every 300 --think 2

With `--model embedded` the model server runs the embedded model (as `make up` does) instead of the
scripted one, and the users ask the eval suite's questions: a run then takes tens of seconds, so a
few users keep its single worker busy and the kills land mid-generation.

At the end every process must be alive (or restarted by its supervisor) and every run must have
reached a final event (a run whose stream Redis lost may end in a 404 on resume instead). Prints the
counts as a Markdown table; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "load"))
sys.path.insert(0, str(HERE.parents[1] / "scripts"))

from chat_client import Conversation, chat_with_resume, new_client  # noqa: E402
from fault_settings import FAULT_ENV  # noqa: E402
from private_stack import PrivateStack, StackOptions, private_stack  # noqa: E402
from scripted_rules import reliability_rules  # noqa: E402
from stack import LOCAL_LLM_MODEL, LOCAL_MODEL_SETTINGS  # noqa: E402

TASKS_FILE = HERE.parent / "eval" / "tasks.yaml"
# Where `make up` keeps the embedded model's saved prompt-prefix state: copied in, so the soak's
# model server starts warm instead of reading the whole prompt for minutes.
SAVED_PREFIX_STATE = HERE.parents[1] / ".local" / "models" / "state"
SOAK_PREFIX_STATE = HERE.parents[1] / ".local" / "reliability" / "model-state"

TAGS = ["load", "tool:raster", "tool:vector", "tool:knowledge", "tool:memory", "plain"]
SUPERVISED = ["model-server", "redis", "postgres"]


def scripted_messages(index: int) -> Iterator[str]:
    for n in itertools.count():
        yield f"[{TAGS[(index + n) % len(TAGS)]}] soak user {index} message {n}"


def eval_questions() -> list[str]:
    """Every task's first question: the tools, places and refusals the embedded model meets in `make eval`."""
    tasks = yaml.safe_load(TASKS_FILE.read_text())["tasks"]
    return [task["question"] for task in tasks if isinstance(task.get("question"), str)]


def embedded_messages(index: int) -> Iterator[str]:
    questions = eval_questions()
    # Each user starts at a different place in the list, so the users do not ask the same thing.
    start = index * len(questions) // 4
    return itertools.cycle(questions[start:] + questions[:start])


async def user(
    base: str,
    messages: Iterator[str],
    runs: list[Conversation],
    stop: asyncio.Event,
    budget: list[int],
    think: float,
    run_timeout: float,
) -> None:
    async with new_client() as client:
        await client.get(f"{base}/api/v1/chat/sessions")
        for message in messages:
            if stop.is_set() or budget[0] <= 0:
                return
            budget[0] -= 1
            conversation = await chat_with_resume(client, base, message, timeout=run_timeout)
            runs.append(conversation)
            if conversation.first.status == 503:
                await asyncio.sleep(float(conversation.first.retry_after or 1))
            # A person reads the answer before the next message; it also leaves the machine's cores to
            # whatever else runs beside a long soak.
            await asyncio.sleep(think)


async def killer(stack: PrivateStack, every: float, stop: asyncio.Event, kills: collections.Counter[str]) -> None:
    for name in itertools.cycle(SUPERVISED):
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
            return
        except TimeoutError:
            pass
        os.kill(stack.supervised_pid(name), signal.SIGKILL)
        kills[name] += 1


def problems_of(stack: PrivateStack, runs: list[Conversation]) -> list[str]:
    problems = []
    for conversation in runs:
        if conversation.first.status == 200 and conversation.final is None:
            lost = any(a.status == 404 for a in conversation.attempts[1:])
            if not lost:
                attempts = "; ".join(
                    f"{a.kind} {a.status} {[e.event for e in a.events][-4:]} {a.failure or ''}".strip()
                    for a in conversation.attempts
                )
                problems.append(f"{conversation.first.message!r}: no final event ({attempts})")
    for proc in stack.processes():
        if not proc.alive:
            problems.append(f"{proc.name} is not running")
    return problems


async def soak(
    stack: PrivateStack, model: str, minutes: float, users: int, max_runs: int, kill_every: float, think: float
) -> int:
    runs: list[Conversation] = []
    kills: collections.Counter[str] = collections.Counter()
    stop = asyncio.Event()
    budget = [max_runs]
    started = time.monotonic()
    messages = embedded_messages if model == "embedded" else scripted_messages
    # An embedded run waits its turn at the single model worker behind the other users' runs.
    run_timeout = 1800.0 if model == "embedded" else 120.0
    workers = [
        asyncio.create_task(user(stack.base_url, messages(i), runs, stop, budget, think, run_timeout))
        for i in range(users)
    ]
    chaos = asyncio.create_task(killer(stack, kill_every, stop, kills)) if kill_every > 0 else None
    deadline = started + minutes * 60
    while time.monotonic() < deadline and budget[0] > 0:
        await asyncio.sleep(1.0)
    stop.set()
    await asyncio.gather(*workers)
    if chaos is not None:
        await chaos
    # Whatever was just killed gets the time its supervisor needs before the processes are checked.
    await asyncio.sleep(20)
    elapsed = time.monotonic() - started

    outcomes: collections.Counter[str] = collections.Counter()
    for conversation in runs:
        final = conversation.final
        if conversation.first.status == 503:
            outcomes["refused (503, gate full or dependency down)"] += 1
        elif final is None:
            outcomes["no final event"] += 1
        elif final.event == "error":
            outcomes[f"error {(final.data.get('error') or {}).get('code')}"] += 1
        else:
            outcomes[final.event] += 1
    restarts = {name: stack.supervised_state(name).get("restarts", 0) for name in SUPERVISED}
    problems = problems_of(stack, runs)
    print(f"\nSoak ({model} model): {users} users, {elapsed / 60:.1f} min, {len(runs)} runs (bound {max_runs})\n")
    print("| outcome | runs |\n|---|---|")
    for outcome, count in sorted(outcomes.items()):
        print(f"| {outcome} | {count} |")
    print("\n| process | SIGKILLs | restarts by its supervisor | running at the end |\n|---|---|---|---|")
    alive = {proc.name: proc.alive for proc in stack.processes()}
    for name in SUPERVISED:
        state = stack.supervised_state(name)
        running = bool(state.get("pid")) and (name != "model-server" or alive.get(name, False))
        print(f"| {name} | {kills[name]} | {restarts[name]} | {'yes' if running else 'NO'} |")
        if not running:
            problems.append(f"{name} is not running under its supervisor")
    for problem in problems[:25]:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--max-runs", type=int, default=5000)
    parser.add_argument("--kill-every", type=float, default=300.0, help="seconds between SIGKILLs (0: none)")
    parser.add_argument("--think", type=float, default=2.0, help="seconds a user waits between messages")
    parser.add_argument("--model", choices=["scripted", "embedded"], default="scripted")
    args = parser.parse_args()
    # The private stack runs with the public development secrets, as `make test` does.
    os.environ.setdefault("STACGIS_ALLOW_DEV_SECRETS", "1")
    with private_stack(StackOptions(gateways=2, rules=reliability_rules(), env=soak_env(args.model))) as stack:
        code = asyncio.run(
            soak(stack, args.model, args.minutes, args.users, args.max_runs, args.kill_every, args.think)
        )
    sys.exit(code)


def soak_env(model: str) -> dict[str, str]:
    if model == "scripted":
        return FAULT_ENV
    state = SOAK_PREFIX_STATE
    state.mkdir(parents=True, exist_ok=True)
    for saved in SAVED_PREFIX_STATE.glob("*.npz") if SAVED_PREFIX_STATE.is_dir() else []:
        if not (state / saved.name).exists():
            shutil.copy2(saved, state / saved.name)
    # The fault suite's short model timeout is for a scripted model that answers at once; the
    # embedded one gets the settings `make up` gives it.
    return {
        **FAULT_ENV,
        **LOCAL_MODEL_SETTINGS,
        "MODEL_SERVER_BACKEND": "auto",
        "MODEL_SERVER_STATE_DIR": str(state),
        "ORCHESTRATOR_LLM_MODEL": LOCAL_LLM_MODEL,
        "GATEWAY_MODEL_LABEL": LOCAL_LLM_MODEL,
    }


if __name__ == "__main__":
    main()
