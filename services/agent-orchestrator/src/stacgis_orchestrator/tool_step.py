"""The tool step of a run: settle the model's calls (names, periods, collections, places), validate
them, refuse repeats, ask for approvals, run MCP calls side by side, emit frontend tools, and report
each result or error in call order."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from redis.exceptions import RedisError

from stacgis_proto.v1 import events_pb2

from . import metrics
from .coordination import Decision
from .events import struct
from .grounding import ToolResultText
from .llm.types import Message, ToolCall, ToolSpec
from .memory import truncate_result
from .premises import asked_variables, asks_for_data, call_gap, misses_years, place_gap, sole_holder
from .prompts import CONCEPT_ANSWER, REPEATED_CALL
from .run_context import RunContext
from .tools.calls import PreparedCall, prepare_call, renamed
from .tools.periods import settle_comparison, settle_period
from .tools.places import PlaceError, resolve_place, settle_places, settle_view
from .tools.pool import ToolUnavailable
from .tools.registry import RegisteredTool
from .tools.scenes import (
    SEARCH_TOOL,
    SERIES_TOOL,
    STATISTICS_TOOL,
    settle_cloud_limit,
    settle_scene_composite,
    settle_scene_count,
    settle_scene_series,
)

log = logging.getLogger(__name__)
tracer = trace.get_tracer("stacgis_orchestrator")

# The orchestrator's own first call for a concept question (`loop.AgentRun._first_call`).
KNOWLEDGE_TOOL = "search_knowledge"
# Tool errors a better call may fix (not a repeat, a user's rejection or an unavailable server).
FIXABLE_ERRORS = frozenset({"tool_failed", "invalid_arguments", "unknown_tool"})


class ToolStep:
    """Runs the tool calls of a run's steps; `act` is one step."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.deps = context.deps
        self.settings = context.settings
        self.run = context.run
        self.sink = context.sink
        self.found = context.found
        # Calls run in this run, by name and arguments, to catch repeats.
        self.seen_calls: dict[str, str] = {}
        self.written: dict[str, ToolCall] = {}

    async def act(self, calls: list[ToolCall], offered: list[ToolSpec]) -> list[Message]:
        """Run one step's tool calls; returns their tool messages in call order."""
        found = self.found
        # The calls as the model wrote them (it may name one, or its place, in its answer).
        self.written.update({call.id: call for call in calls})
        found.called.update(call.name for call in calls)
        calls = [self._settle_question(self._misnamed(call, offered)) for call in calls]
        found.called.update(call.name for call in calls)
        data_calls = [c for c in calls if "collection_id" in c.arguments or "collection_ids" in c.arguments]
        found.data_asked = found.data_asked or bool(data_calls)
        for call in calls:
            await self._check_place(call.arguments.get("place"))
        wants_data = asks_for_data(self.run.message, found.catalog)
        calls = [settle_view(call, self.run.message, wants_data, found.memories) for call in calls]
        calls = await settle_places(
            [self._settle_collection(call) for call in calls],
            self.deps.catalog,
            self.run.spatial,
            self.deps.pool,
            self.context.headers,
            self.run.message,
            self._time_resolved,
            found.memories,
        )
        found.step_failures = []
        found.step_failed_calls = []
        results_before = len(found.tool_texts)
        prepared = [self._prepare(call, offered) for call in calls]
        for item in prepared:
            self._check_repeat(item)
        results: dict[str, str] = {}
        for item in prepared:
            if item.error is not None:
                self._tool_error(item, item.error, item.error_kind, 0.0)
                results[item.call.id] = item.error
        await self._approvals([p for p in prepared if p.error is None and p.tool and self._gated(p.tool)], results)
        runnable: list[PreparedCall] = []
        for item in prepared:
            if item.error is not None or item.tool is None:
                continue
            if item.ui is not None:  # a frontend tool: a command for the browser
                found.tool_call_count += 1
                self.sink.emit(
                    frontend_tool=events_pb2.FrontendTool(
                        call_id=item.call.id, name=item.tool.name, arguments=struct(item.ui.arguments)
                    )
                )
                metrics.TOOL_CALLS.labels(item.tool.name, "frontend", "ok").inc()
                results[item.call.id] = f"Done: {item.ui.acknowledgement}"
                # What the map now shows (e.g. a place resolved to coordinates) is a result too.
                found.tool_texts.append(ToolResultText(item.call.id, item.tool.name, results[item.call.id]))
                continue
            found.tool_call_count += 1
            self.sink.emit(
                tool_start=events_pb2.ToolStart(
                    call_id=item.call.id,
                    tool_name=item.tool.name,
                    arguments=struct(item.arguments),
                    server=item.tool.server,
                )
            )
            runnable.append(item)
        tasks = [asyncio.create_task(self._execute(item)) for item in runnable]
        try:
            # Results are reported in call order even when a later call finishes first.
            for item, task in zip(runnable, tasks, strict=True):
                report = await task
                results[item.call.id] = report()
        finally:
            for task in tasks:
                task.cancel()
        if len(found.tool_texts) > results_before:
            found.step_failures, found.step_failed_calls = [], []  # something worked: not stuck on the errors
        return [
            Message(role="tool", content=results[c.id], tool_call_id=c.id, name=c.name)
            for c in calls
            if c.id in results
        ]

    # Settling the model's calls.

    async def _check_place(self, place: Any) -> None:
        """Resolve a place the question names (once per run) and note whether any collection of the
        variable asked for reaches it (`premises.place_gap`)."""
        if not self.settings.premise_check or not isinstance(place, str) or not asked_variables(self.run.message):
            return
        key = " ".join(place.lower().split())
        found = self.found
        if key in found.place_gaps or key not in " ".join(self.run.message.lower().split()):
            return
        found.place_gaps[key] = None
        try:
            resolved = await resolve_place(place, self.deps.pool, self.context.headers)
        except PlaceError:
            return
        point, box = resolved.get("point"), resolved.get("bbox")
        if isinstance(point, list) and len(point) == 2:
            area = (float(point[0]), float(point[1]), float(point[0]), float(point[1]))
        elif isinstance(box, list) and len(box) == 4:
            area = (float(box[0]), float(box[1]), float(box[2]), float(box[3]))
        else:
            return
        found.place_areas[key] = area
        found.place_gaps[key] = place_gap(self.run.message, found.catalog, str(resolved.get("name") or place), area)

    def _check_repeat(self, item: PreparedCall) -> None:
        """A call already made in this run with the same arguments is not run again: the model is
        told it has that result, and the next step must answer."""
        # A rejected call (unknown tool, invalid arguments) repeated as it was is a loop too.
        arguments = item.call.arguments if item.error is not None or item.tool is None else item.arguments
        key = item.call.name + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        first = self.seen_calls.get(key)
        if first is None:
            self.seen_calls[key] = item.call.id
            return
        item.error = REPEATED_CALL.format(name=item.call.name, call_id=first)
        item.error_kind = "repeated_call"
        self.found.force_answer = True

    def _gated(self, tool: RegisteredTool) -> bool:
        return tool.kind == "mcp" and self.deps.catalog.requires_approval(tool)

    def _settle_collection(self, call: ToolCall) -> ToolCall:
        """A collection that holds none of the variables or years asked for (a temperature question
        sent to a DEM, 1999 sent to 2016's precipitation), or one that does not exist (the model made up
        `global-temperature-2016`), is replaced by the one collection that can answer there and then
        (`premises.sole_holder`), before places are settled for it."""
        asked = call.arguments.get("collection_id")
        if not self.settings.premise_check or call.arguments_error is not None or not isinstance(asked, str):
            return call
        catalog = self.found.catalog
        # A call with an expression computes band math (the scene tools); the others read stored bands.
        band_math = "expression" in call.arguments
        unknown = bool(catalog.collections) and asked not in catalog.collections
        lacking = call_gap(self.run.message, catalog, asked, band_math) is not None
        if not unknown and not lacking and not misses_years(self.run.message, catalog, asked):
            return call
        sole = sole_holder(self.run.message, catalog, self._call_area(call.arguments), scenes=band_math)
        if sole is None or sole.id == asked:
            return call
        self.context.note(f"{asked} does not hold the data asked for; running {call.name} on {sole.id}.\n")
        return ToolCall(call.id, call.name, {**call.arguments, "collection_id": sole.id})

    def _prepare(self, call: ToolCall, offered: list[ToolSpec]) -> PreparedCall:
        prepared = prepare_call(call, offered, self.deps.catalog, self.settings.map_style_hosts)
        tool = prepared.tool
        if self.found.concept_searched and tool and tool.kind == "mcp" and tool.name != KNOWLEDGE_TOOL:
            # Asked what zonal statistics are, the 1.5B model read the passage naming
            # compute_zonal_stats and started a demonstration on Luxembourg instead of answering.
            prepared.error = CONCEPT_ANSWER.format(name=tool.name)
            prepared.error_kind = "not_needed"
            self.found.force_answer = True
            self.found.not_needed.append(self.written.get(call.id, call))
            return prepared
        if prepared.error is None and self.settings.premise_check:
            # A collection that holds none of the variables asked for, where several others do (one
            # would have replaced it in `_settle_collection`), is refused naming them.
            gap = call_gap(
                self.run.message,
                self.found.catalog,
                prepared.arguments.get("collection_id"),
                "expression" in prepared.arguments,
            )
            if gap is not None:
                metrics.PREMISE_GAPS.labels("call").inc()
                prepared.error = f"Invalid arguments for {call.name}: {gap}"
                prepared.error_kind = "invalid_arguments"
        return prepared

    def _call_area(self, arguments: dict[str, Any]) -> tuple[float, float, float, float] | None:
        """Where a call looks: its place as resolved for the premises, its point or its box."""
        place = arguments.get("place")
        if isinstance(place, str):
            return self.found.place_areas.get(" ".join(place.lower().split()))
        lon, lat, bbox = arguments.get("lon"), arguments.get("lat"), arguments.get("bbox")
        if isinstance(lon, int | float) and isinstance(lat, int | float):
            return (float(lon), float(lat), float(lon), float(lat))
        if isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, int | float) for v in bbox):
            return (float(bbox[0]), float(bbox[1]), float(bbox[2]), float(bbox[3]))
        return None

    def _time_resolved(self, collection_id: str) -> bool:
        collection = self.found.catalog.collections.get(collection_id)
        return collection is not None and collection.years is not None

    def _settle_question(self, call: ToolCall) -> ToolCall:
        """The user's words win: two compared periods or a year (`tools/periods.py`), scenes counted, a
        composite named, the month with the most or least, no cloud limit unless the question speaks of
        clouds (`tools/scenes.py`)."""
        compared = settle_comparison(call, self.run.message, lambda name: self.deps.catalog.get(name) is not None)
        if compared is not call:
            a, b = compared.arguments["period_a"], compared.arguments["period_b"]
            self.context.note(f"The question compares two periods: running {compared.name} for {a} and {b}.\n")
        if self.deps.catalog.get(SEARCH_TOOL) is not None:
            counted = settle_scene_count(compared, self.run.message, self._scene_collection)
            if counted.name != compared.name:
                self.context.note(f"The question counts scenes: running {counted.name}.\n")
            compared = counted
        if self.deps.catalog.get(STATISTICS_TOOL) is not None:
            asked = asked_variables(self.run.message)
            composite = settle_scene_composite(
                compared, self.run.message, self._scene_collection, asked[0][1] if asked else None
            )
            if composite is not compared:
                self.context.note(f"The question names a composite: running {composite.name}.\n")
            elif self.deps.catalog.get(SERIES_TOOL) is not None:
                composite = settle_scene_series(
                    compared, self.run.message, self._scene_collection, asked[0][1] if asked else None
                )
                if composite is not compared:
                    self.context.note(f"Which period had the most or least: running {composite.name}.\n")
            compared = composite
        return settle_period(settle_cloud_limit(compared, self.run.message), self.run.message)

    def _scene_collection(self, collection_id: str) -> bool:
        collection = self.found.catalog.collections.get(collection_id)
        return collection is not None and collection.scenes

    def _misnamed(self, call: ToolCall, offered: list[ToolSpec]) -> ToolCall:
        """A misremembered tool name runs as the tool its arguments fit (`calls.renamed`)."""
        name = renamed(call, offered, self.deps.catalog)
        if name is None:
            return call
        self.context.note(f"{call.name} is not a tool: running {name}.\n")
        return ToolCall(call.id, name, call.arguments)

    # Approvals.

    async def _approvals(self, gated: list[PreparedCall], results: dict[str, str]) -> None:
        if not gated:
            return
        coordinator = self.deps.coordinator
        timeout = self.settings.approval_timeout_seconds
        opened: list[tuple[PreparedCall, str]] = []
        for item in gated:
            assert item.tool is not None
            try:
                approval_id = await coordinator.open_approval(
                    self.run.run_id, self.run.identity.user_id, item.tool.name, timeout
                )
            except (RedisError, OSError) as error:
                log.warning("cannot open an approval for %s: %s", item.tool.name, error)
                item.error = (
                    f"{item.tool.name} needs the user's approval, which cannot be asked right now; it was not run."
                )
                item.error_kind = "unavailable"
                self._tool_error(item, item.error, item.error_kind, 0.0)
                results[item.call.id] = item.error
                continue
            opened.append((item, approval_id))
            self.sink.emit(
                approval_required=events_pb2.ApprovalRequired(
                    approval_id=approval_id,
                    call_id=item.call.id,
                    tool_name=item.tool.name,
                    arguments=struct(item.arguments),
                    timeout_seconds=int(timeout),
                    server=item.tool.server,
                    description=item.tool.description,
                )
            )
        with tracer.start_as_current_span("await_approval", attributes={"stacgis.approvals": len(opened)}):
            decisions = await asyncio.gather(*(self._decision(aid, timeout) for _, aid in opened))
        for (item, _), decision in zip(opened, decisions, strict=True):
            metrics.APPROVALS.labels(decision.status).inc()
            if decision.status == "approved":
                continue
            assert item.tool is not None
            if decision.status == "expired":
                item.error = f"The user did not approve {item.tool.name} within {timeout:g} s, so it was not run."
                item.error_kind = "approval_timeout"
            else:
                reason = f" Reason: {decision.reason}" if decision.reason else ""
                item.error = f"The user rejected the call to {item.tool.name}; it was not run.{reason}"
                item.error_kind = "rejected"
            self._tool_error(item, item.error, item.error_kind, 0.0)
            results[item.call.id] = item.error

    async def _decision(self, approval_id: str, wait_seconds: float) -> Decision:
        try:
            decision: Decision = await self.deps.coordinator.wait_for_decision(approval_id, wait_seconds)
            return decision
        except (RedisError, OSError) as error:
            log.warning("lost the approval %s: %s", approval_id, error)
            return Decision("expired", "the approval could not be tracked (Redis unavailable)")

    # Running and reporting.

    async def _execute(self, item: PreparedCall) -> Callable[[], str]:
        """Run one call; returns how to report it (emit its event, give the model's text), so that
        reports can follow call order while the calls themselves overlap."""
        tool = item.tool
        assert tool is not None
        with tracer.start_as_current_span(
            f"execute_tool {tool.name}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": item.call.id,
                "stacgis.tool.server": tool.server,
            },
        ) as span:
            started = time.perf_counter()
            if tool.kind == "builtin":
                text = self.deps.catalog.describe()
                duration = time.perf_counter() - started
                return lambda: self._tool_result(item, text, duration)
            try:
                outcome = await self.deps.pool.call(tool, item.arguments, self.context.headers())
            except ToolUnavailable as error:
                span.set_status(Status(StatusCode.ERROR, error.message))
                metrics.TOOL_DURATION.labels(tool.name, tool.server).observe(error.duration_s)
                message = (
                    f"{tool.name} could not run: {error.message}. Do not call it again now; "
                    "use another tool or answer with what you have."
                )
                failure = error

                def report_unavailable() -> str:
                    self._tool_error(item, failure.message, failure.kind, failure.duration_s)
                    return message

                return report_unavailable
            metrics.TOOL_DURATION.labels(tool.name, tool.server).observe(outcome.duration_s)
            if outcome.is_error:
                span.set_status(Status(StatusCode.ERROR, outcome.text[:200]))

                def report_error() -> str:
                    self._tool_error(item, outcome.text, "tool_failed", outcome.duration_s)
                    return f"Error from {tool.name}: {outcome.text}"

                return report_error
            return lambda: self._tool_result(item, outcome.text, outcome.duration_s)

    def _tool_result(self, item: PreparedCall, text: str, duration_s: float) -> str:
        assert item.tool is not None
        shown, truncated = truncate_result(text, self.settings.max_tool_result_chars)
        self.found.tool_texts.append(ToolResultText(item.call.id, item.tool.name, text))
        self.sink.emit(
            tool_result=events_pb2.ToolResult(
                call_id=item.call.id,
                tool_name=item.tool.name,
                result=shown,
                duration_ms=int(duration_s * 1000),
                truncated=truncated,
            )
        )
        metrics.TOOL_CALLS.labels(item.tool.name, item.tool.server or item.tool.kind, "ok").inc()
        return text

    def _tool_error(self, item: PreparedCall, error: str, kind: str, duration_s: float) -> None:
        name = item.tool.name if item.tool else item.call.name
        server = (item.tool.server or item.tool.kind) if item.tool else "unknown"
        if kind in FIXABLE_ERRORS:
            self.found.step_failures.append(f"{name}: {error}")
            self.found.step_failed_calls.append(item.call)
        self.sink.emit(
            tool_error=events_pb2.ToolError(
                call_id=item.call.id, tool_name=name, error=error, duration_ms=int(duration_s * 1000), kind=kind
            )
        )
        metrics.TOOL_CALLS.labels(name, server, kind).inc()
