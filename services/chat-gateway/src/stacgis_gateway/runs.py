"""Runs outlive connections: one background task per run reads the orchestrator's stream and appends
every event to the run's Redis Stream, which SSE responses on any replica tail.

The task also keeps the run's gate slot and session lock alive, and at the end, whatever the outcome,
persists the run's messages and usage once, releases both, and only then writes the final event.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stacgis_common.auth import Identity, mint_for

from .config import GatewaySettings
from .contract import InvalidEvent, RunSummary, event_json, parse_event, run_request
from .events import TERMINAL, make_event
from .eventwriter import EventLog, EventWriter
from .gate import ConcurrencyGate
from .history_writes import HistoryWriter
from .messages import ChatMessage
from .metrics import INVALID_EVENTS, RUNS_FINISHED, RUNS_TAKEN_OVER
from .orchestrator import OrchestratorClient, OrchestratorError
from .runstore import RunMeta, RunStore
from .sessions import Session, SessionService
from .store import RunRecord

log = logging.getLogger(__name__)
# Orphaned runs taken over per sweep: a replica that died with many runs is cleared over a few rounds.
ORPHANS_PER_SWEEP = 50
# Runs kept alive per pipeline (each: a gate slot, a session lock and a heartbeat).
KEEP_ALIVE_BATCH = 200


@dataclass
class RunSpec:
    run_id: str
    user_id: str
    session: Session
    message: str
    spatial_context: dict[str, Any] | None
    # The model the user chose (checked against the orchestrator's list); None: the orchestrator's default.
    model: str | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class _RunState:
    """What the gateway learns about a run while forwarding its events."""

    spec: RunSpec
    summary: RunSummary = field(default_factory=RunSummary)
    terminal: tuple[str, dict[str, Any]] | None = None  # ("done" | "error", the whole event)
    stop_reason: str | None = None  # why the gateway itself stopped the run: "cancelled" or "shutdown"
    # Seq of the `session` event the gateway writes itself when the run failed before the orchestrator's.
    synthetic_start_seq: int | None = None
    writer: EventWriter | None = None  # the run's events on their way to its stream
    slot_pruned: bool = False  # its gate slot was found pruned while it ran (warned once)

    def fail(self, run_id: str, code: str, message: str) -> None:
        """End the run with an error event of the gateway's own (unless it already has a final event)."""
        if self.terminal is not None:
            return
        if not self.summary.started:
            self.synthetic_start_seq = self.next_seq()
        error = make_event(run_id, self.next_seq(), self.summary.step, "error", {"code": code, "message": message})
        self.summary.add(parse_event(error)[1])
        self.terminal = ("error", error)

    def next_seq(self) -> int:
        self.summary.last_seq += 1
        return self.summary.last_seq


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
        self._events = EventLog(runs)  # every run's streamed events, in group commits
        self._keeper: asyncio.Task[None] | None = None

    async def start(self, spec: RunSpec) -> None:
        """Record the run in Redis and start its background task (the caller holds its gate slot and lock)."""
        await self._runs.create(spec.run_id, spec.user_id, spec.session.id, spec.message)
        state = _RunState(spec)
        task = asyncio.create_task(self._execute(spec, state), name=f"run-{spec.run_id}")
        self._tasks[spec.run_id] = (task, state)
        task.add_done_callback(lambda _: self._tasks.pop(spec.run_id, None))
        if self._keeper is None or self._keeper.done():
            # A context of its own: not the (trace) context of the request that happened to start it.
            self._keeper = asyncio.create_task(
                self._keep_alive_forever(), name="runs-keep-alive", context=contextvars.Context()
            )

    async def shutdown(self, grace_seconds: float) -> None:
        """Let running runs finish for a while, then end the rest with an error event (and save them)."""
        tasks = [task for task, _ in self._tasks.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
            for run_id, (task, state) in list(self._tasks.items()):
                if task in pending:
                    log.warning("ending run at shutdown", extra={"run_id": run_id})
                    state.stop_reason = "shutdown"
                    task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=10)
        await self._events.stop()  # every run has ended: nothing is queued
        if self._keeper is not None:
            self._keeper.cancel()

    # The run's life.

    async def _execute(self, spec: RunSpec, state: _RunState) -> None:
        run_id = spec.run_id
        task = asyncio.current_task()
        assert task is not None
        state.writer = self._events.writer(run_id)
        try:
            token = mint_for(self._settings, Identity(user_id=spec.user_id, session_id=spec.session.id))
            request = run_request(
                spec.run_id, spec.session.id, spec.message, spec.session.history, spec.spatial_context, spec.model
            )
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
            # The run is kept alive until its task ends, so while the history is written (which may wait for
            # Postgres) it keeps its slot and lock and no other replica declares it lost meanwhile.
            # What was forwarded is in the stream before the final events.
            await state.writer.close()
            await self._finish(spec, state)

    async def _forward(self, spec: RunSpec, state: _RunState, event: dict[str, Any]) -> None:
        try:
            name, message = parse_event(event)  # the one parse of this event
        except InvalidEvent as error:
            INVALID_EVENTS.inc()
            log.warning(
                "skipping an event that is not an AgentEvent", extra={"run_id": spec.run_id, "error": str(error)}
            )
            return
        message.run_id = spec.run_id
        if name == "session":
            message.run_started.session_id = spec.session.id
        elif name == "approval_required" and message.approval_required.approval_id:
            await self._runs.remember_approval(message.approval_required.approval_id, spec.run_id, spec.user_id)
        state.summary.add(message)
        data = event_json(message)
        if name in TERMINAL:
            # Written by _finish, after the run's messages are stored and its slot released.
            state.terminal = (name, data)
            return
        assert state.writer is not None
        state.writer.add(name, data)  # written at once, or with the rest of its burst

    async def _keep_alive_forever(self) -> None:
        """One timer keeps every run of this process alive (gate slot, session lock, heartbeat) and notices a
        requested cancel, KEEP_ALIVE_BATCH runs per round trip (three round trips of their own per run and round
        were a tenth of the process's CPU with 1,000 runs)."""
        while True:
            await asyncio.sleep(self._settings.gate_refresh_seconds)
            live = [(task, state) for task, state in self._tasks.values()]
            for start in range(0, len(live), KEEP_ALIVE_BATCH):
                try:
                    await self._keep_alive(live[start : start + KEEP_ALIVE_BATCH])
                except Exception as error:  # noqa: BLE001 - a Redis hiccup must not end the runs
                    log.warning("run keep-alive failed", extra={"runs": len(live), "error": repr(error)})

    async def _keep_alive(self, runs: list[tuple[asyncio.Task[None], _RunState]]) -> None:
        async with self._runs.pipeline() as pipe:
            for _, state in runs:
                spec = state.spec
                await self._gate.refresh_in(pipe, spec.run_id, spec.user_id)
                await self._sessions.refresh_run_lock_in(pipe, spec.session.id, spec.run_id)
                self._runs.heartbeat_in(pipe, spec.run_id)
            replies = await pipe.execute(raise_on_error=False)
        size = 2 + RunStore.HEARTBEAT_REPLIES
        for index, (task, state) in enumerate(runs):
            mine = replies[index * size : (index + 1) * size]
            refreshed, heartbeat = mine[0], mine[2:]
            run_id = state.spec.run_id
            failed = next((reply for reply in mine if isinstance(reply, Exception)), None)
            if failed is not None:
                log.warning("run keep-alive failed", extra={"run_id": run_id, "error": repr(failed)})
                continue
            if not refreshed and not state.slot_pruned:
                state.slot_pruned = True
                log.warning("gate slot was pruned while the run was alive", extra={"run_id": run_id})
            cancel_at = RunStore.cancel_at(heartbeat)
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
        messages = [ChatMessage(role="user", content=spec.message), *state.summary.answer_messages(run_id)]
        record = RunRecord(
            run_id=run_id,
            user_id=spec.user_id,
            session_id=spec.session.id,
            started_at=spec.started_at,
            **state.summary.record_fields(),
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
            await self._runs.finish(run_id, record.outcome)
        RUNS_FINISHED.labels(record.outcome).inc()

    # Runs whose replica died.

    async def take_over_orphans_forever(self) -> None:
        """Every replica looks for runs whose replica stopped heart-beating and ends them, whether or not a
        browser follows them: the partial answer is saved, the session unlocked and the slot freed."""
        while True:
            await asyncio.sleep(self._settings.gate_refresh_seconds * 2)
            try:
                await self.take_over_orphans()
            except Exception as error:  # noqa: BLE001 - a Redis or Postgres hiccup: the next round tries again
                log.warning("taking over orphaned runs failed", extra={"error": repr(error)})

    async def take_over_orphans(self) -> None:
        for run_id in await self._runs.orphans(self._settings.slot_ttl_seconds, ORPHANS_PER_SWEEP):
            if run_id in self._tasks:
                continue  # this replica's own run, its heartbeat late (a Redis hiccup): not an orphan
            meta = await self._runs.meta(run_id)
            if meta is None or meta.status == "finished":
                await self._runs.forget_live(run_id)
            elif await self.declare_lost(meta):
                RUNS_TAKEN_OVER.inc()
                log.warning("took over a run whose replica stopped", extra={"run_id": run_id})

    async def declare_lost(self, meta: RunMeta) -> bool:
        """End a run whose owner stopped refreshing it, once for everyone; False if another replica does."""
        if not await self._runs.claim_lost(meta.run_id):
            return False
        entries = await self._runs.all_entries(meta.run_id)
        if any(entry.event in TERMINAL for entry in entries):
            await self._runs.forget_live(meta.run_id)
            return False
        summary = RunSummary()
        for entry in entries:
            summary.add_json(entry.data)
        messages = [ChatMessage(role="user", content=meta.message), *summary.answer_messages(meta.run_id)]
        error = make_event(
            meta.run_id,
            summary.last_seq + 1,
            summary.step,
            "error",
            {"code": "run_lost", "message": "the gateway replica running this run stopped; the run has ended"},
        )
        summary.add(parse_event(error)[1])
        record = RunRecord(
            run_id=meta.run_id,
            user_id=meta.user_id,
            session_id=meta.session_id,
            started_at=datetime.fromtimestamp(meta.started_at or time.time(), UTC),
            **summary.record_fields(),
        )
        await self._history.write(record, messages)
        with _logged("release session lock", meta.run_id):
            await self._sessions.unlock_run(meta.session_id, meta.run_id)
        with _logged("release gate slot", meta.run_id):
            await self._gate.release(meta.run_id, meta.user_id)
        await self._runs.append(meta.run_id, "error", error)
        await self._runs.finish(meta.run_id, "error")
        return True


@contextlib.contextmanager
def _logged(what: str, run_id: str) -> Any:
    try:
        yield
    except Exception:  # cleanup steps are independent; log and go on
        log.exception("could not %s", what, extra={"run_id": run_id})
