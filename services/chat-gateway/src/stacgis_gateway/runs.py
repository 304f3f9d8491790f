"""Runs outlive connections: one background task per run reads the orchestrator's stream and appends
every event to the run's Redis Stream, which SSE responses on any replica tail.

The task also keeps the run's gate slot and session lock alive, and at the end, whatever the outcome,
persists the run's messages and usage once, releases both, and only then writes the final event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stacgis_common.answer import fold_content
from stacgis_common.auth import mint_internal_token

from .config import GatewaySettings
from .events import TERMINAL, as_int, check, make_event, normalise
from .eventwriter import EventWriter
from .gate import ConcurrencyGate
from .history_writes import HistoryWriter
from .messages import ChatMessage
from .metrics import INVALID_EVENTS, RUNS_FINISHED
from .orchestrator import OrchestratorClient, OrchestratorError
from .runstore import RunMeta, RunStore
from .sessions import Session, SessionService
from .store import RunRecord

log = logging.getLogger(__name__)


@dataclass
class RunSpec:
    run_id: str
    user_id: str
    session: Session
    message: str
    spatial_context: dict[str, Any] | None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class _RunState:
    """What the gateway learns about a run while forwarding its events."""

    started: bool = False  # run_started forwarded (the browser has its session id)
    last_seq: int = 0
    step: int = 0
    content: list[str] = field(default_factory=list)
    tool_calls: int = 0
    terminal: tuple[str, dict[str, Any]] | None = None  # ("done" | "error", the whole event)
    stop_reason: str | None = None  # why the gateway itself stopped the run: "cancelled" or "shutdown"
    # Seq of the `session` event the gateway writes itself when the run failed before the orchestrator's.
    synthetic_start_seq: int | None = None
    writer: EventWriter | None = None  # the run's events on their way to its stream

    def fail(self, run_id: str, code: str, message: str) -> None:
        """End the run with an error event of the gateway's own (unless it already has a final event)."""
        if self.terminal is not None:
            return
        if not self.started:
            self.synthetic_start_seq = self.next_seq()
        error = make_event(run_id, self.next_seq(), self.step, "error", {"code": code, "message": message})
        self.terminal = ("error", error)

    def next_seq(self) -> int:
        self.last_seq += 1
        return self.last_seq


def run_request(spec: RunSpec, model_history: list[ChatMessage]) -> dict[str, Any]:
    """The proto3 JSON of stacgis.v1.RunRequest."""
    body: dict[str, Any] = {
        "runId": spec.run_id,
        "sessionId": spec.session.id,
        "message": spec.message,
        "history": [message.to_proto_json() for message in model_history],
    }
    if spec.spatial_context:
        context: dict[str, Any] = {}
        center = spec.spatial_context.get("map_center")
        if center is not None:
            context["mapCenter"] = {"lat": center["lat"], "lon": center["lon"]}
        if spec.spatial_context.get("zoom") is not None:
            context["zoom"] = spec.spatial_context["zoom"]
        if spec.spatial_context.get("selected_feature") is not None:
            context["selectedFeature"] = spec.spatial_context["selected_feature"]
        if spec.spatial_context.get("drawn_geometry") is not None:
            context["drawnGeometry"] = spec.spatial_context["drawn_geometry"]
        if context:
            body["spatialContext"] = context
    return body


class RunManager:
    def __init__(
        self,
        settings: GatewaySettings,
        runs: RunStore,
        sessions: SessionService,
        history: HistoryWriter,
        gate: ConcurrencyGate,
        orchestrator: OrchestratorClient,
    ) -> None:
        self._settings = settings
        self._runs = runs
        self._sessions = sessions
        self._history = history
        self._gate = gate
        self._orchestrator = orchestrator
        self._tasks: dict[str, tuple[asyncio.Task[None], _RunState]] = {}

    async def start(self, spec: RunSpec) -> None:
        """Record the run in Redis and start its background task (the caller holds its gate slot and lock)."""
        await self._runs.create(spec.run_id, spec.user_id, spec.session.id, spec.message)
        state = _RunState()
        task = asyncio.create_task(self._execute(spec, state), name=f"run-{spec.run_id}")
        self._tasks[spec.run_id] = (task, state)
        task.add_done_callback(lambda _: self._tasks.pop(spec.run_id, None))

    async def shutdown(self, grace_seconds: float) -> None:
        """Let running runs finish for a while, then end the rest with an error event (and save them)."""
        tasks = [task for task, _ in self._tasks.values()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
        for run_id, (task, state) in list(self._tasks.items()):
            if task in pending:
                log.warning("ending run at shutdown", extra={"run_id": run_id})
                state.stop_reason = "shutdown"
                task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=10)

    # The run's life.

    async def _execute(self, spec: RunSpec, state: _RunState) -> None:
        run_id = spec.run_id
        task = asyncio.current_task()
        assert task is not None
        keeper = asyncio.create_task(self._keep_alive(spec, state, task))
        state.writer = EventWriter(self._runs, run_id)
        try:
            token = mint_internal_token(
                self._settings.internal_token_secret.get_secret_value(),
                spec.user_id,
                spec.session.id,
                self._settings.internal_token_ttl_seconds,
                self._settings.internal_token_audience,
            )
            request = run_request(spec, spec.session.history)
            async with contextlib.aclosing(self._orchestrator.stream_run(request, token)) as events:
                async for event in events:
                    await self._forward(spec, state, event)
                    if state.terminal is not None:
                        break
            await state.writer.flush()  # a failed write ends the run here, not after its final event
            if state.terminal is None:
                state.fail(
                    run_id, "orchestrator_disconnected", "the orchestrator ended the stream before the run finished"
                )
        except asyncio.CancelledError:
            task.uncancel()  # the run ends normally from here: store it, release it, tell the browser
            if state.stop_reason == "cancelled":
                state.fail(run_id, "cancelled", "the run was cancelled")
            else:
                state.fail(run_id, "gateway_shutdown", "the gateway stopped before the run finished")
        except OrchestratorError as error:
            log.warning("orchestrator failed", extra={"run_id": run_id, "error": str(error)})
            state.fail(run_id, "orchestrator_unavailable", str(error))
        except Exception as error:  # the run must end with an event and a released slot
            log.exception("run failed", extra={"run_id": run_id})
            state.fail(run_id, "internal", f"the gateway failed: {type(error).__name__}")
        finally:
            # The keeper goes on while the history is written (which may wait for Postgres), so the run
            # keeps its slot and lock and no other replica declares it lost meanwhile.
            try:
                # What was forwarded is in the stream before the final events.
                await state.writer.close()
                await self._finish(spec, state)
            finally:
                keeper.cancel()

    async def _forward(self, spec: RunSpec, state: _RunState, event: dict[str, Any]) -> None:
        parsed = normalise(event)
        if parsed is None:
            log.warning("skipping an event with no known payload", extra={"run_id": spec.run_id, "keys": sorted(event)})
            return
        name, payload = parsed
        problem = check(event)
        if problem is not None:
            INVALID_EVENTS.inc()
            log.warning("skipping an event that is not an AgentEvent", extra={"run_id": spec.run_id, "error": problem})
            return
        event["runId"] = spec.run_id
        state.last_seq = max(state.last_seq, as_int(event.get("seq")))
        state.step = as_int(event.get("step")) or state.step
        if name == "session":
            payload["sessionId"] = spec.session.id
            state.started = True
        elif name == "content":
            fold_content(state.content, payload)
        elif name == "tool_start":
            state.tool_calls += 1
        elif name == "approval_required" and payload.get("approvalId"):
            await self._runs.remember_approval(str(payload["approvalId"]), spec.run_id, spec.user_id)
        if name in TERMINAL:
            # Written by _finish, after the run's messages are stored and its slot released.
            state.terminal = (name, event)
            return
        assert state.writer is not None
        state.writer.add(name, event)  # written at once, or with the rest of its burst

    async def _keep_alive(self, spec: RunSpec, state: _RunState, task: asyncio.Task[None]) -> None:
        warned = False
        while True:
            await asyncio.sleep(self._settings.gate_refresh_seconds)
            try:
                if not await self._gate.refresh(spec.run_id, spec.user_id) and not warned:
                    warned = True
                    log.warning("gate slot was pruned while the run was alive", extra={"run_id": spec.run_id})
                await self._sessions.refresh_run_lock(spec.session.id, spec.run_id)
                cancel_at = await self._runs.heartbeat(spec.run_id)
            except Exception as error:  # a Redis hiccup must not end the run
                log.warning("run keep-alive failed", extra={"run_id": spec.run_id, "error": repr(error)})
                continue
            if (
                cancel_at is not None
                and time.time() >= cancel_at
                and state.stop_reason is None
                and state.terminal is None  # already ending: the cancel must not cut the history write
            ):
                state.stop_reason = "cancelled"
                task.cancel()

    async def _finish(self, spec: RunSpec, state: _RunState) -> None:
        run_id = spec.run_id
        assert state.terminal is not None
        name, event = state.terminal
        payload = event[name]
        messages = [ChatMessage(role="user", content=spec.message)]
        if name == "done":
            finish_reason = str(payload.get("finishReason") or payload.get("finish_reason") or "completed")
            outcome = "cancelled" if finish_reason == "cancelled" else "done"
            error_code = None
            messages += _answer_messages(payload, run_id)
            usage = payload.get("usage") or {}
            input_tokens = as_int(usage.get("inputTokens", usage.get("input_tokens")))
            output_tokens = as_int(usage.get("outputTokens", usage.get("output_tokens")))
            tool_calls = as_int(payload.get("toolCalls", payload.get("tool_calls"))) or state.tool_calls
            steps = as_int(payload.get("steps")) or state.step
        else:
            error_code = str(payload.get("code") or "internal")
            outcome = "cancelled" if error_code == "cancelled" else "error"
            finish_reason = None
            partial = "".join(state.content)
            if partial:
                messages.append(ChatMessage(role="assistant", content=partial))
            input_tokens = output_tokens = 0
            tool_calls, steps = state.tool_calls, state.step
        record = RunRecord(
            run_id=run_id,
            user_id=spec.user_id,
            session_id=spec.session.id,
            outcome=outcome,
            finish_reason=finish_reason,
            error_code=error_code,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tool_calls=tool_calls,
            steps=steps,
            started_at=spec.started_at,
        )
        # Each step on its own: a failing store must not keep the slot or hide the final event.
        # Retried while Postgres is down, then parked in Redis: a run the browser sees end is never lost.
        written = await self._history.write(record, messages)
        if written in ("stored", "parked"):
            with _logged("update the session cache", run_id):
                await self._sessions.append(spec.session, messages)
        with _logged("release session lock", run_id):
            await self._sessions.unlock_run(spec.session.id, run_id)
        with _logged("release gate slot", run_id):
            await self._gate.release(run_id, spec.user_id)
        with _logged("write final events", run_id):
            if state.synthetic_start_seq is not None:
                # The browser learns its session id from this event even when the run never started.
                started = make_event(
                    run_id,
                    state.synthetic_start_seq,
                    0,
                    "runStarted",
                    {"sessionId": spec.session.id, "model": self._settings.model_label},
                )
                await self._runs.append(run_id, "session", started)
            await self._runs.append(run_id, name, event)
        with _logged("mark run finished", run_id):
            await self._runs.finish(run_id, outcome)
        RUNS_FINISHED.labels(outcome).inc()

    # Runs whose replica died.

    async def declare_lost(self, meta: RunMeta) -> None:
        """Called by a replica tailing a run whose owner stopped refreshing it: end the run once for everyone."""
        if not await self._runs.claim_lost(meta.run_id):
            return
        entries = await self._runs.all_entries(meta.run_id)
        if any(entry.event in TERMINAL for entry in entries):
            return
        partial: list[str] = []
        last_seq = step = tool_calls = 0
        for entry in entries:
            data = json.loads(entry.data)
            last_seq = max(last_seq, as_int(data.get("seq")))
            step = as_int(data.get("step")) or step
            if entry.event == "content":
                fold_content(partial, data.get("content") or {})
            elif entry.event == "tool_start":
                tool_calls += 1
        messages = [ChatMessage(role="user", content=meta.message)]
        if partial:
            messages.append(ChatMessage(role="assistant", content="".join(partial)))
        record = RunRecord(
            run_id=meta.run_id,
            user_id=meta.user_id,
            session_id=meta.session_id,
            outcome="error",
            finish_reason=None,
            error_code="run_lost",
            input_tokens=0,
            output_tokens=0,
            tool_calls=tool_calls,
            steps=step,
            started_at=datetime.fromtimestamp(meta.started_at or time.time(), UTC),
        )
        await self._history.write(record, messages)
        with _logged("release session lock", meta.run_id):
            await self._sessions.unlock_run(meta.session_id, meta.run_id)
        with _logged("release gate slot", meta.run_id):
            await self._gate.release(meta.run_id, meta.user_id)
        error = make_event(
            meta.run_id,
            last_seq + 1,
            step,
            "error",
            {"code": "run_lost", "message": "the gateway replica running this run stopped; the run has ended"},
        )
        await self._runs.append(meta.run_id, "error", error)
        await self._runs.finish(meta.run_id, "error")


def _answer_messages(done: dict[str, Any], run_id: str) -> list[ChatMessage]:
    new_messages = done.get("newMessages", done.get("new_messages")) or []
    try:
        parsed = [ChatMessage.from_proto_json(item) for item in new_messages]
    except (ValueError, AttributeError, TypeError):
        log.warning("done event has malformed newMessages; storing its content only", extra={"run_id": run_id})
        parsed = []
    if not parsed:
        content = str(done.get("content") or "")
        parsed = [ChatMessage(role="assistant", content=content)] if content else []
    grounding = done.get("grounding")
    answers = [m for m in parsed if m.role == "assistant" and m.content and not m.tool_calls]
    if isinstance(grounding, dict) and answers:
        answers[-1].grounding = grounding
    return parsed


@contextlib.contextmanager
def _logged(what: str, run_id: str) -> Any:
    try:
        yield
    except Exception:  # cleanup steps are independent; log and go on
        log.exception("could not %s", what, extra={"run_id": run_id})
