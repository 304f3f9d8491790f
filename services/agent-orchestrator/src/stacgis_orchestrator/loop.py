"""The ReAct loop: think (model call), act (tool calls), observe (results into memory), respond."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Status, StatusCode
from redis.exceptions import RedisError

from stacgis_common.answer import mentions
from stacgis_common.auth import Identity, mint_for
from stacgis_proto.v1 import events_pb2

from . import metrics
from .context_sources import CATALOG_RESOURCE, ResourceCache, fetch_memories
from .context_window import ModelBudget, estimate_tokens, fit_to_context, parse_overflow
from .coordination import Decision
from .events import EventSink, message_to_proto, struct
from .grounding import GroundingReport, ToolResultText, check_answer, extract_numbers
from .llm.base import ChatProvider
from .llm.repetition import RepetitionGuard, without_repetition
from .llm.stream_filter import ContentFilter
from .llm.text_tools import describe_tools_for_prompt, parse_json_answer, parse_tool_blocks
from .llm.types import Message, ModelError, ModelTurn, TextDelta, ThinkingDelta, ToolCall, ToolSpec, new_call_id
from .memory import ConversationMemory, consistent_history, truncate_result
from .prefix import all_tools, offered_specs
from .premises import (
    Catalog,
    Gap,
    asked_variables,
    asks_for_data,
    call_gap,
    catalogue_gaps,
    misses_years,
    place_gap,
    sole_holder,
)
from .prompts import (
    FAILED_CALL,
    FORCE_ANSWER,
    FORCE_ANSWER_AGAIN,
    KNOWLEDGE_ANSWER,
    REPEATED_CALL,
    UNGROUNDED_DRAFT,
    UNSTATED_CLASS,
    results_summary,
    run_context_message,
    spatial_context_message,
    system_prompt,
)
from .questions import is_concept_question, memory_note
from .settings import OrchestratorSettings
from .tools.calls import PreparedCall, prepare_call, renamed, unique_ids
from .tools.catalog import ToolCatalog
from .tools.periods import settle_comparison, settle_period
from .tools.places import PlaceError, resolve_place, settle_places, settle_view
from .tools.pool import ToolPool, ToolUnavailable
from .tools.registry import RegisteredTool
from .tools.selection import ToolSelector

log = logging.getLogger(__name__)
tracer = trace.get_tracer("stacgis_orchestrator")

ERROR_CODES = {
    "model_unavailable": "model_unavailable",
    "model_timeout": "model_timeout",
    "context_too_long": "context_too_long",
    "tools_unsupported": "model_error",
    "model_error": "model_error",
}
LAST_THOUGHT_CHARS = 500
# The orchestrator's own first calls (`questions`), and how many passages a knowledge search reads.
KNOWLEDGE_TOOL = "search_knowledge"
KNOWLEDGE_FIRST_LIMIT = 3
MEMORY_TOOL = "add_memory"
# An answer telling the user what to do, where the model should have done it.
ADVICE = re.compile(
    r"\b(you (should|need to|can|could|may|must)|please (provide|specify|select|use|try)|try (using|again))\b",
    re.IGNORECASE,
)
# Tool errors a better call may fix (not a repeat, a user's rejection or an unavailable server).
FIXABLE_ERRORS = frozenset({"tool_failed", "invalid_arguments", "unknown_tool"})
# Backoff while the model server cannot be reached: first wait and cap, in seconds.
UNAVAILABLE_FIRST_WAIT_SECONDS, UNAVAILABLE_MAX_WAIT_SECONDS = 1.0, 8.0


@dataclass(frozen=True)
class SpatialInput:
    center: tuple[float, float] | None = None
    zoom: float | None = None
    selected_feature: dict[str, Any] | None = None
    drawn_geometry: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunInput:
    run_id: str
    identity: Identity
    message: str
    history: list[Message]
    spatial: SpatialInput
    max_steps: int
    model: str


@dataclass
class AgentDeps:
    """Everything a run needs, shared by all runs of the process."""

    settings: OrchestratorSettings
    provider: ChatProvider
    pool: ToolPool
    catalog: ToolCatalog
    selector: ToolSelector
    resources: ResourceCache
    coordinator: Any  # coordination.Coordinator; Any keeps the loop testable without Redis
    budget: ModelBudget  # learnt token ratios and context windows per model


class AgentRun:
    """One run: emits events into `sink`, returns when the run has ended (its last event sent)."""

    def __init__(self, deps: AgentDeps, run: RunInput, sink: EventSink) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.run = run
        self.sink = sink
        self.cancel_requested = False
        self.started = time.monotonic()
        self.input_tokens = 0
        self.output_tokens = 0
        self.tool_call_count = 0
        self.acted = False
        self.steps = 0
        self.new_messages: list[Message] = []
        self.answer: list[str] = []
        self.text_tools_only = not self.settings.llm_native_tools
        self.outcome = "error"
        # Set when the model repeats a call: the next step must answer.
        self.force_answer = False
        # Calls run in this run, by name and arguments, to catch repeats.
        self.seen_calls: dict[str, str] = {}
        # Successful tool results of this run, for grounding and the fallback summary.
        self.tool_texts: list[ToolResultText] = []
        # The catalogue summaries the model was given (numbers there count as given).
        self.catalog_text = ""
        # Set once an ungrounded draft answer was withdrawn: the next answer stands.
        self.draft_withdrawn = not self.settings.grounding_retry
        # Errors of the last step when none of its calls succeeded (a fix may be asked for, once).
        self.step_failures: list[str] = []
        self.step_failed_calls: list[ToolCall] = []
        self.failure_retried = not self.settings.grounding_retry
        # The raster catalogue, for checking that an answer's data covers the question.
        self.catalog = Catalog()
        # Set once a call asked for raster data (a collection_id), whether or not it succeeded.
        self.data_asked = False
        # Places of this run's calls that the question names, with what the catalogue lacks there.
        self.place_gaps: dict[str, Gap | None] = {}
        self.memories: list[str] = []  # the user's long-term memories relevant to this message
        self.place_areas: dict[str, tuple[float, float, float, float]] = {}  # places resolved for the premises

    # Entry point.

    async def execute(self) -> None:
        metrics.ACTIVE_RUNS.inc()
        with tracer.start_as_current_span(
            "invoke_agent stacgis",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.request.model": self.run.model,
                "stacgis.run_id": self.run.run_id,
                "stacgis.user_id": self.run.identity.user_id,
            },
        ) as span:
            try:
                self.sink.emit(
                    run_started=events_pb2.RunStarted(
                        session_id=self.run.identity.session_id or "",
                        model=self.run.model,
                        max_steps=self.run.max_steps,
                    )
                )
                finish = await self._steps()
                self._done(finish)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if self.cancel_requested and task is not None:
                    # An explicit cancel ends the run with a proper final event; a vanished caller does not need one.
                    task.uncancel()
                    self._done("cancelled")
                else:
                    self.outcome = "disconnected"
                    raise
            except ModelError as error:
                metrics.MODEL_ERRORS.labels(error.code).inc()
                span.set_status(Status(StatusCode.ERROR, error.message))
                self._error(ERROR_CODES.get(error.code, "model_error"), error.message)
            except Exception as error:
                log.exception("run %s failed", self.run.run_id)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                self._error("internal", f"internal error in run {self.run.run_id}: {type(error).__name__}")
            finally:
                metrics.ACTIVE_RUNS.dec()
                metrics.RUNS.labels(self.outcome).inc()
                metrics.STEPS_PER_RUN.observe(self.steps)
                span.set_attribute("stacgis.steps", self.steps)
                span.set_attribute("stacgis.outcome", self.outcome)
                self.sink.close()

    def request_cancel(self) -> None:
        self.cancel_requested = True

    def _done(self, finish: str) -> None:
        self.outcome = finish
        answer = "".join(self.answer)
        self.sink.emit(
            done=events_pb2.Done(
                content=answer,
                # A cancel can leave a tool call without its result: keep history consistent.
                new_messages=[message_to_proto(m) for m in consistent_history(self.new_messages)],
                usage=events_pb2.TokenUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
                steps=self.steps,
                tool_calls=self.tool_call_count,
                finish_reason=finish,
                duration_ms=int((time.monotonic() - self.started) * 1000),
                grounding=grounding_proto(
                    check_answer(answer, self._grounding_sources(), self.run.message, self.catalog_text)
                ),
            )
        )

    def _grounding_sources(self) -> list[ToolResultText]:
        """This run's tool results, then those of earlier turns (a follow-up may quote them)."""
        earlier = [
            ToolResultText(m.tool_call_id or "", m.name or "", m.content)
            for m in self.run.history
            if m.role == "tool" and m.content
        ]
        return [*self.tool_texts, *earlier]

    def _error(self, code: str, message: str) -> None:
        self.outcome = "error"
        self.sink.emit(error=events_pb2.Error(code=code, message=message))

    # The loop.

    async def _steps(self) -> str:
        memory = await self._prepare_memory()
        await self._first_call(memory)
        last_thought = ""
        for step in range(1, self.run.max_steps + 1):
            await self._check_cancel()
            self.sink.step = step
            self.steps = step
            final_step = step == self.run.max_steps
            forced = final_step or self.force_answer
            with tracer.start_as_current_span(
                "agent_step", attributes={"stacgis.step": step, "stacgis.forced": forced}
            ):
                # The same tools are offered on a forced step: withholding them would change the prefix.
                offered = await self._offer_tools(f"{self.run.message} {last_thought}".strip())
                messages = memory.get_messages()
                if forced:
                    messages = [*messages, Message(role="user", content=FORCE_ANSWER)]
                turn, visible = await self._think(messages, offered, memory.current_request_index())
                last_thought = (turn.thinking or visible)[-LAST_THOUGHT_CHARS:]
                if turn.tool_calls and not forced:
                    self.acted = True
                    await self._run_calls(memory, visible, turn.tool_calls, offered)
                    continue
                if turn.tool_calls and not visible.strip():
                    # A forced step's calls are never run: ask once more, then summarise the results.
                    self._withhold(turn.tool_calls)
                    messages = [*messages, Message(role="user", content=FORCE_ANSWER_AGAIN)]
                    turn, visible = await self._think(messages, offered, memory.current_request_index())
                    if turn.tool_calls:
                        self._withhold(turn.tool_calls)
                if not final_step and not self.draft_withdrawn and visible.strip():
                    invented = self._invented_numbers(visible)
                    unstated = [] if invented else self._unstated_classes(visible)
                    if invented:
                        self.draft_withdrawn = True
                        numbers = ", ".join(invented)
                        correction = UNGROUNDED_DRAFT.format(numbers=numbers, question=self.run.message)
                        self._withdraw_draft(f"no tool result gave {numbers}", memory, visible, correction)
                        continue
                    if unstated:
                        self.draft_withdrawn = True
                        classes = "; ".join(unstated)
                        correction = UNSTATED_CLASS.format(classes=classes, question=self.run.message)
                        self._withdraw_draft(f"the data gives the class {classes}", memory, visible, correction)
                        continue
                gap = self._premise_gap(visible)
                if gap is not None:
                    metrics.PREMISE_GAPS.labels(gap.kind).inc()
                    # The refusal is the whole answer: no guesses written beside earlier calls stay.
                    visible = self._replace_draft(gap.refusal, f"the data does not cover {gap.missing}", whole=True)
                if not forced and not self.failure_retried and self.step_failures and ADVICE.search(visible):
                    # The last calls all failed and the model told the user what to do instead of
                    # fixing the call ("you should use the bcsd-temperature-1999 collection").
                    self.failure_retried = True
                    correction = FAILED_CALL.format(error=self.step_failures[0][:400], question=self.run.message)
                    self._withdraw_draft("the call failed and was not tried again", memory, visible, correction)
                    fix = self._advised_fix(visible)
                    if fix is not None:
                        # The advice names the one collection to use: make that call, as advised.
                        await self._run_calls(memory, "", [fix], offered)
                    continue
                if not visible.strip():
                    if self.tool_texts:
                        fallback = results_summary(
                            [(r.tool_name, r.text) for r in self.tool_texts], self.settings.max_tool_result_chars
                        )
                    elif final_step and turn.tool_calls:
                        fallback = f"I could not finish within the budget of {self.run.max_steps} steps."
                    else:
                        fallback = "The model returned an empty answer."
                    self._content(fallback)
                    visible = fallback
                self.new_messages.append(memory.add_assistant(visible))
                return "step_budget" if final_step and self.acted else "completed"
        raise AssertionError("the step loop always returns")  # max_steps >= 1

    async def _first_call(self, memory: ConversationMemory) -> None:
        """The call a concept question or a request to remember starts with (`questions`)."""
        if not self.settings.first_calls:
            return
        note = memory_note(self.run.message)
        arguments: dict[str, Any]
        if note is not None:
            tool, arguments, why = MEMORY_TOOL, {"content": note[0], "kind": note[1]}, "A note to remember: saving it."
        elif is_concept_question(self.run.message):
            tool, arguments = KNOWLEDGE_TOOL, {"query": self.run.message, "limit": KNOWLEDGE_FIRST_LIMIT}
            why = "A question about a concept: searching the knowledge base."
        else:
            return
        if self.deps.catalog.get(tool) is None:
            return
        self.sink.emit(thinking=events_pb2.Thinking(text=why + "\n"))
        call = ToolCall(new_call_id(), tool, arguments)
        closing = KNOWLEDGE_ANSWER if tool == KNOWLEDGE_TOOL else ""
        await self._run_calls(memory, "", [call], await self._offer_tools(self.run.message), closing)

    async def _run_calls(
        self, memory: ConversationMemory, text: str, calls: list[ToolCall], offered: list[ToolSpec], note: str = ""
    ) -> None:
        """Record an assistant turn with `calls`, run them and record their results (each followed by
        `note`, a line for the model)."""
        self.new_messages.append(memory.add_assistant(text, calls))
        for result in await self._act(calls, offered):
            content = _with_note(result.content, note) if note else result.content
            message, _ = memory.add_tool_result(result.tool_call_id or "", result.name or "", content)
            self.new_messages.append(message)

    def _invented_numbers(self, text: str) -> list[str]:
        report = check_answer(text, self._grounding_sources(), self.run.message, self.catalog_text)
        return [checked.number.text for checked in report.numbers if not checked.supported]

    def _unstated_classes(self, draft: str) -> list[str]:
        """The classes point queries of this run gave (`class_at_point`), when the draft names none."""
        classes: list[str] = []
        for result in self.tool_texts:
            try:
                data = json.loads(result.text)
            except ValueError:
                continue
            named = data.get("class_at_point") if isinstance(data, dict) else None
            if isinstance(named, str):
                classes += [part.split(" (band ")[0].strip() for part in named.split(";")]
        lowered = draft.lower()
        return [] if any(c.lower() in lowered for c in classes) else classes

    def _premise_gap(self, draft: str) -> Gap | None:
        """What the catalogue cannot answer of the question (`premises`), for a draft that does not
        already say so. Runs that asked for raster data (a call with a collection, even one that
        failed) are checked for every gap. Others for a place the question names that a call looked
        up, and for a variable no collection holds when the draft gives numbers and no tool result
        of the run speaks of the variable ("the PM2.5 level in Berlin" answered with Berlin's
        coordinates); a concept question's answer is never replaced."""
        if not self.settings.premise_check or not draft.strip():
            return None
        if not self.data_asked:
            if is_concept_question(self.run.message):
                return None
            # A place the question names that no collection of the variable reaches ("land cover at
            # Nairobi" answered after a boundary lookup): checked for any call with that place.
            placed = next((g for g in self.place_gaps.values() if g is not None and not g.answered_by(draft)), None)
            if placed is not None or not extract_numbers(draft):
                return placed
            unspoken = [
                g
                for g in catalogue_gaps(self.run.message, self.catalog)
                if g.kind == "variable" and not any(mentions(r.text, g.missing) for r in self.tool_texts)
            ]
            return next((g for g in unspoken if not g.answered_by(draft)), None)
        gaps = [*catalogue_gaps(self.run.message, self.catalog), *filter(None, self.place_gaps.values())]
        gap = next(iter(gaps), None)
        return None if gap is None or gap.answered_by(draft) else gap

    async def _check_place(self, place: Any) -> None:
        """Resolve a place the question names (once per run) and note whether any collection of the
        variable asked for reaches it (`premises.place_gap`)."""
        if not self.settings.premise_check or not isinstance(place, str) or not asked_variables(self.run.message):
            return
        key = " ".join(place.lower().split())
        if key in self.place_gaps or key not in " ".join(self.run.message.lower().split()):
            return
        self.place_gaps[key] = None
        try:
            resolved = await resolve_place(place, self.deps.pool, self._headers)
        except PlaceError:
            return
        point, box = resolved.get("point"), resolved.get("bbox")
        if isinstance(point, list) and len(point) == 2:
            area = (float(point[0]), float(point[1]), float(point[0]), float(point[1]))
        elif isinstance(box, list) and len(box) == 4:
            area = (float(box[0]), float(box[1]), float(box[2]), float(box[3]))
        else:
            return
        self.place_areas[key] = area
        self.place_gaps[key] = place_gap(self.run.message, self.catalog, str(resolved.get("name") or place), area)

    def _advised_fix(self, advice: str) -> ToolCall | None:
        """The failed call again with the one other collection id the advice names, if it names one."""
        failed = [c for c in self.step_failed_calls if isinstance(c.arguments.get("collection_id"), str)]
        if len(failed) != 1:
            return None
        tried = failed[0].arguments["collection_id"]
        named = {
            cid
            for cid in self.catalog.collections
            if cid != tried and re.search(rf"(?<![\w-]){re.escape(cid)}(?![\w-])", advice)
        }
        if len(named) != 1:
            return None
        return ToolCall(new_call_id(), failed[0].name, {**failed[0].arguments, "collection_id": named.pop()})

    def _replace_draft(self, text: str, reason: str, whole: bool = False) -> str:
        """Put `text` in place of this step's answer on the user's screen (`whole`: of everything the
        run showed, text written beside earlier calls included); returns the new step text."""
        if whole:
            self._step_answer_start = 0
        del self.answer[self._step_answer_start :]
        self.answer.append(("\n\n" if self.answer else "") + text)
        self._step_has_content = True
        self.sink.emit(content=events_pb2.ContentDelta(text="".join(self.answer), replace=True))
        self.sink.emit(thinking=events_pb2.Thinking(text=f"Draft replaced: {reason}.\n"))
        return text

    def _withdraw_draft(self, reason: str, memory: ConversationMemory, draft: str, correction: str) -> None:
        """Take this step's text back from the answer: the UI replaces what it showed, and the
        history never keeps it (it stays in this run's working memory, followed by `correction` as
        the user's words, so the model sees its mistake)."""
        memory.add_assistant(draft)
        memory.add_user(correction)
        del self.answer[self._step_answer_start :]
        self._step_has_content = False
        self.sink.emit(content=events_pb2.ContentDelta(text="".join(self.answer), replace=True))
        self.sink.emit(thinking=events_pb2.Thinking(text=f"Draft withdrawn: {reason}. Looking again.\n"))
        metrics.DRAFTS_WITHDRAWN.inc()

    def _withhold(self, calls: list[ToolCall]) -> None:
        names = ", ".join(call.name for call in calls)
        log.info("run %s: the model called %s on a forced step; not run", self.run.run_id, names)

    async def _prepare_memory(self) -> ConversationMemory:
        memory = ConversationMemory(self.settings.history_window, self.settings.max_tool_result_chars)
        headers = self._headers()
        resources, self.memories, _ = await asyncio.gather(
            self._resources(headers),
            fetch_memories(self.deps.pool, self.settings, self.run.message, headers),
            self._learn_window(),
        )
        # The prefix: only what every run shares. Per-run context follows the history.
        memory.add_system(system_prompt(resources, self.settings.place_names))
        self.catalog_text = "\n".join(resources.values())
        self.catalog = Catalog.from_resource(self.deps.resources.raw(CATALOG_RESOURCE))
        gaps = catalogue_gaps(self.run.message, self.catalog) if self.settings.premise_check else []
        spatial = self.run.spatial
        context = spatial_context_message(
            spatial.center, spatial.zoom, spatial.selected_feature, spatial.drawn_geometry
        )
        for message in consistent_history(self.run.history):
            memory.add(message)
        memory.add_user(run_context_message(self.run.max_steps, self.memories, context, [g.note for g in gaps]))
        memory.add_user(self.run.message)
        return memory

    async def _learn_window(self) -> None:
        """The model's own context window (`/api/show`), once per model and process."""
        budget, model = self.deps.budget, self.run.model
        if model in budget.asked:
            return
        budget.asked.add(model)
        try:
            async with asyncio.timeout(self.settings.context_timeout_seconds):
                budget.learn_window(model, await self.deps.provider.context_length(model))
        except Exception:
            log.warning("cannot read the context window of %s", model, exc_info=True)

    async def _resources(self, headers: dict[str, str]) -> dict[str, str]:
        try:
            await self.deps.pool.refresh_stale()
            return await self.deps.resources.get(headers)
        except Exception:
            log.warning("context resources unavailable", exc_info=True)
            return {}

    async def _check_cancel(self) -> None:
        if not self.cancel_requested:
            try:
                self.cancel_requested = await self.deps.coordinator.cancel_requested(self.run.run_id)
            except Exception:
                log.warning("cannot read the cancel flag of run %s", self.run.run_id, exc_info=True)
        if self.cancel_requested:
            raise asyncio.CancelledError

    async def _offer_tools(self, query: str) -> list[ToolSpec]:
        if self.settings.tool_selection == "all":
            # Timed like dynamic selection (which times itself), so the dashboard shows either mode.
            started = time.perf_counter()
            offered = all_tools(self.deps.catalog, self.deps.pool, self.settings)
            metrics.TOOL_SELECTION_SECONDS.observe(time.perf_counter() - started)
            return offered
        return await self._select_tools(query)

    async def _select_tools(self, query: str) -> list[ToolSpec]:
        catalog = self.deps.catalog
        always = catalog.always_included()
        always_names = {tool.name for tool in always}
        candidates = [t for t in catalog.mcp_tools() if t.name not in always_names and self.deps.pool.available(t)]
        with tracer.start_as_current_span("select_tools", attributes={"stacgis.candidates": len(candidates)}):
            ranked = await self.deps.selector.rank(query, candidates)
        chosen = [item.tool for item in ranked[: self.settings.tool_top_k]]
        return offered_specs([*chosen, *always], self.settings)

    # Think.

    async def _think(
        self, messages: list[Message], offered: list[ToolSpec], protect_from: int
    ) -> tuple[ModelTurn, str]:
        native = [] if self.text_tools_only else offered
        if self.text_tools_only and offered:
            messages = [messages[0], Message(role="system", content=describe_tools_for_prompt(offered)), *messages[1:]]
            protect_from += 1
        detect = bool(offered) and (self.settings.llm_text_tool_fallback or self.text_tools_only)
        try:
            return await self._call_fitted(messages, native, offered, detect, protect_from)
        except ModelError as error:
            if error.code == "tools_unsupported" and not self.text_tools_only:
                log.warning("%s; describing tools in the prompt instead", error.message)
                self.text_tools_only = True
                return await self._think(messages, offered, protect_from)
            raise

    async def _call_fitted(
        self, messages: list[Message], native: list[ToolSpec], offered: list[ToolSpec], detect: bool, protect_from: int
    ) -> tuple[ModelTurn, str]:
        """Fit the conversation to the window and call the model. A context overflow the model reports
        is compacted harder and retried (bounded); it ends the run only when nothing is left to remove."""
        budget, model = self.deps.budget, self.run.model
        level, retries, last_sent = 0, 0, None
        while True:
            fitted, compacted = fit_to_context(
                messages,
                native,
                budget.window(model),
                self.settings.llm_max_output_tokens,
                protect_from,
                budget.ratio(model),
                level,
            )
            if fitted == last_sent:
                level += 1  # this level removed nothing more: go further before asking the model again
                continue
            if compacted:
                log.info("compacted %d messages to fit the context window (level %d)", compacted, level)
            raw_estimate = estimate_tokens(fitted, native)
            try:
                turn, visible = await self._call_model_waiting(fitted, native, offered, detect)
            except ModelError as error:
                if error.code != "context_too_long" or self._step_has_content:
                    raise
                numbers = parse_overflow(error.message)
                if numbers is not None:
                    budget.calibrate(model, raw_estimate, numbers[0])
                    budget.learn_window(model, numbers[1])
                retries += 1
                if retries > self.settings.context_overflow_retries:
                    raise
                metrics.MODEL_ERRORS.labels("context_overflow_retried").inc()
                log.warning("run %s: %s; compacting and retrying", self.run.run_id, error.message)
                level += 1
                last_sent = fitted
                continue
            budget.calibrate(model, raw_estimate, turn.input_tokens)
            return turn, visible

    async def _call_model_waiting(
        self, messages: list[Message], native: list[ToolSpec], offered: list[ToolSpec], detect: bool
    ) -> tuple[ModelTurn, str]:
        """A model server that is restarting is waited for (bounded, with backoff, said in the activity
        feed) as long as nothing of this call has reached the user."""
        deadline = time.monotonic() + self.settings.llm_unavailable_wait_seconds
        delay = UNAVAILABLE_FIRST_WAIT_SECONDS
        while True:
            try:
                return await self._call_model(messages, native, offered, detect)
            except ModelError as error:
                if not error.transient or self._step_has_content or time.monotonic() + delay > deadline:
                    raise
                metrics.MODEL_ERRORS.labels("model_unavailable_waited").inc()
                self.sink.emit(
                    thinking=events_pb2.Thinking(
                        text=f"Waiting for the model ({error.message}); trying again in {delay:g} s.\n"
                    )
                )
                await asyncio.sleep(delay)
                await self._check_cancel()
                delay = min(delay * 2, UNAVAILABLE_MAX_WAIT_SECONDS)

    async def _call_model(
        self, messages: list[Message], native: list[ToolSpec], offered: list[ToolSpec], detect: bool
    ) -> tuple[ModelTurn, str]:
        provider = self.deps.provider
        labels = ("chat", provider.provider_name, self.run.model)
        started = time.perf_counter()
        first_token: float | None = None
        turn: ModelTurn | None = None
        content_filter = ContentFilter(detect_text_tools=detect)
        self._step_has_content = False
        self._step_answer_start = len(self.answer)
        with tracer.start_as_current_span(
            f"chat {self.run.model}",
            kind=trace.SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider.provider_name,
                "gen_ai.request.model": self.run.model,
                "stacgis.tools_offered": len(offered),
            },
        ) as span:
            guard = RepetitionGuard()
            try:
                stream = provider.stream(messages, native, self.run.model, self.settings.llm_think)
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        if first_token is None:
                            first_token = time.perf_counter()
                            metrics.TIME_TO_FIRST_TOKEN.labels(*labels).observe(first_token - started)
                        if isinstance(event, ThinkingDelta):
                            self.sink.emit(thinking=events_pb2.Thinking(text=event.text))
                        elif isinstance(event, TextDelta):
                            self._emit_filtered(content_filter.feed(event.text))
                            if guard.feed(event.text):
                                break  # closing the stream stops the model server's generation
                        else:
                            turn = event
            except ModelError as error:
                metrics.MODEL_DURATION.labels(*labels, error.code).observe(time.perf_counter() - started)
                span.set_status(Status(StatusCode.ERROR, error.message))
                span.set_attribute("error.type", error.code)
                raise
            if guard.tripped:
                metrics.REPETITIONS_STOPPED.inc()
                turn = ModelTurn(content="", thinking="", tool_calls=[], finish_reason="repetition")
            if turn is None:
                raise ModelError("model_error", "the model stream ended without a final message")
            self._emit_filtered(content_filter.finish())
            calls = list(turn.tool_calls)
            calls_from_held_text = False
            if not calls and detect:
                calls = parse_tool_blocks(content_filter.tool_blocks)
                if not calls and content_filter.held_text():
                    known = {tool.name for tool in self.deps.catalog.all()} | {spec.name for spec in offered}
                    calls = parse_json_answer(content_filter.held_text(), known)
                    calls_from_held_text = bool(calls)
            if not calls_from_held_text:
                self._emit_filtered(content_filter.release_held())
            calls = unique_ids(calls)
            metrics.MODEL_DURATION.labels(*labels, "").observe(time.perf_counter() - started)
            if turn.input_tokens is not None:
                self.input_tokens += turn.input_tokens
                metrics.TOKEN_USAGE.labels(*labels, "input").observe(turn.input_tokens)
                span.set_attribute("gen_ai.usage.input_tokens", turn.input_tokens)
            if turn.output_tokens is not None:
                self.output_tokens += turn.output_tokens
                metrics.TOKEN_USAGE.labels(*labels, "output").observe(turn.output_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", turn.output_tokens)
            span.set_attribute("gen_ai.response.finish_reasons", [turn.finish_reason])
            thinking = turn.thinking + "".join(content_filter.thinking)
            answer = content_filter.answer
            if guard.tripped:
                answer = self._replace_draft(without_repetition(answer), "the model repeated itself; stopped")
            final = ModelTurn(
                content=answer,
                thinking=thinking,
                tool_calls=calls,
                input_tokens=turn.input_tokens,
                output_tokens=turn.output_tokens,
                finish_reason=turn.finish_reason,
            )
            return final, answer

    def _emit_filtered(self, deltas: list[ThinkingDelta | TextDelta]) -> None:
        for delta in deltas:
            if isinstance(delta, ThinkingDelta):
                self.sink.emit(thinking=events_pb2.Thinking(text=delta.text))
            else:
                self._content(delta.text)

    def _content(self, text: str) -> None:
        if not text:
            return
        if not self._step_has_content and self.answer:
            # Text of an earlier step is already on screen: start this step's text on a new paragraph.
            text = "\n\n" + text
        self._step_has_content = True
        self.answer.append(text)
        self.sink.emit(content=events_pb2.ContentDelta(text=text))

    _step_has_content = False
    _step_answer_start = 0

    # Act and observe.

    def _headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {mint_for(self.settings, self.run.identity)}"}
        propagate.inject(headers)
        return headers

    async def _act(self, calls: list[ToolCall], offered: list[ToolSpec]) -> list[Message]:
        """Run one step's tool calls; returns their tool messages in call order."""
        calls = [self._settle_time(self._misnamed(call, offered)) for call in calls]
        data_calls = [c for c in calls if "collection_id" in c.arguments or "collection_ids" in c.arguments]
        self.data_asked = self.data_asked or bool(data_calls)
        for call in calls:
            await self._check_place(call.arguments.get("place"))
        wants_data = asks_for_data(self.run.message, self.catalog)
        calls = [settle_view(call, self.run.message, wants_data, self.memories) for call in calls]
        calls = await settle_places(
            [self._settle_collection(call) for call in calls],
            self.deps.catalog,
            self.run.spatial,
            self.deps.pool,
            self._headers,
            self.run.message,
            self._time_resolved,
            self.memories,
        )
        self.step_failures = []
        self.step_failed_calls = []
        results_before = len(self.tool_texts)
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
                self.tool_call_count += 1
                self.sink.emit(
                    frontend_tool=events_pb2.FrontendTool(
                        call_id=item.call.id, name=item.tool.name, arguments=struct(item.ui.arguments)
                    )
                )
                metrics.TOOL_CALLS.labels(item.tool.name, "frontend", "ok").inc()
                results[item.call.id] = f"Done: {item.ui.acknowledgement}"
                # What the map now shows (e.g. a place resolved to coordinates) is a result too.
                self.tool_texts.append(ToolResultText(item.call.id, item.tool.name, results[item.call.id]))
                continue
            self.tool_call_count += 1
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
        if len(self.tool_texts) > results_before:
            self.step_failures, self.step_failed_calls = [], []  # something worked: not stuck on the errors
        return [
            Message(role="tool", content=results[c.id], tool_call_id=c.id, name=c.name)
            for c in calls
            if c.id in results
        ]

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
        self.force_answer = True

    def _gated(self, tool: RegisteredTool) -> bool:
        return tool.kind == "mcp" and self.deps.catalog.requires_approval(tool)

    def _settle_collection(self, call: ToolCall) -> ToolCall:
        """A collection that holds none of the variables or years asked for (a temperature question
        sent to a DEM, 1999 sent to 2016's precipitation) is replaced by the one collection that can
        answer there and then (`premises.sole_holder`), before places are settled for it."""
        asked = call.arguments.get("collection_id")
        if not self.settings.premise_check or call.arguments_error is not None or not isinstance(asked, str):
            return call
        lacking = call_gap(self.run.message, self.catalog, asked) is not None
        if not lacking and not misses_years(self.run.message, self.catalog, asked):
            return call
        sole = sole_holder(self.run.message, self.catalog, self._call_area(call.arguments))
        if sole is None or sole.id == asked:
            return call
        why = f"{asked} does not hold the data asked for; running {call.name} on {sole.id}.\n"
        self.sink.emit(thinking=events_pb2.Thinking(text=why))
        return ToolCall(call.id, call.name, {**call.arguments, "collection_id": sole.id})

    def _prepare(self, call: ToolCall, offered: list[ToolSpec]) -> PreparedCall:
        prepared = prepare_call(call, offered, self.deps.catalog, self.settings.map_style_hosts)
        if prepared.error is None and self.settings.premise_check:
            # A collection that holds none of the variables asked for, where several others do (one
            # would have replaced it in `_settle_collection`), is refused naming them.
            gap = call_gap(self.run.message, self.catalog, prepared.arguments.get("collection_id"))
            if gap is not None:
                metrics.PREMISE_GAPS.labels("call").inc()
                prepared.error = f"Invalid arguments for {call.name}: {gap}"
                prepared.error_kind = "invalid_arguments"
        return prepared

    def _call_area(self, arguments: dict[str, Any]) -> tuple[float, float, float, float] | None:
        """Where a call looks: its place as resolved for the premises, its point or its box."""
        place = arguments.get("place")
        if isinstance(place, str):
            return self.place_areas.get(" ".join(place.lower().split()))
        lon, lat, bbox = arguments.get("lon"), arguments.get("lat"), arguments.get("bbox")
        if isinstance(lon, int | float) and isinstance(lat, int | float):
            return (float(lon), float(lat), float(lon), float(lat))
        if isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, int | float) for v in bbox):
            return (float(bbox[0]), float(bbox[1]), float(bbox[2]), float(bbox[3]))
        return None

    def _time_resolved(self, collection_id: str) -> bool:
        collection = self.catalog.collections.get(collection_id)
        return collection is not None and collection.years is not None

    def _settle_time(self, call: ToolCall) -> ToolCall:
        """The user's words about time win (`tools/periods.py`): two compared periods, or a year."""
        compared = settle_comparison(call, self.run.message, lambda name: self.deps.catalog.get(name) is not None)
        if compared is not call:
            a, b = compared.arguments["period_a"], compared.arguments["period_b"]
            note = f"The question compares two periods: running {compared.name} for {a} and {b}.\n"
            self.sink.emit(thinking=events_pb2.Thinking(text=note))
        return settle_period(compared, self.run.message)

    def _misnamed(self, call: ToolCall, offered: list[ToolSpec]) -> ToolCall:
        """A misremembered tool name runs as the tool its arguments fit (`calls.renamed`)."""
        name = renamed(call, offered, self.deps.catalog)
        if name is None:
            return call
        self.sink.emit(thinking=events_pb2.Thinking(text=f"{call.name} is not a tool: running {name}.\n"))
        return ToolCall(call.id, name, call.arguments)

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
                outcome = await self.deps.pool.call(tool, item.arguments, self._headers())
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
        self.tool_texts.append(ToolResultText(item.call.id, item.tool.name, text))
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
            self.step_failures.append(f"{name}: {error}")
            self.step_failed_calls.append(item.call)
        self.sink.emit(
            tool_error=events_pb2.ToolError(
                call_id=item.call.id, tool_name=name, error=error, duration_ms=int(duration_s * 1000), kind=kind
            )
        )
        metrics.TOOL_CALLS.labels(name, server, kind).inc()


def _with_note(content: str, note: str) -> str:
    """A tool result closed by a line for the model: a last `note` key of a JSON object (the result
    stays JSON for whoever reads it as such), else a last paragraph."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return f"{content}\n\n{note}"
    return json.dumps({**data, "note": note}, ensure_ascii=False, separators=(",", ":"))


def grounding_proto(report: GroundingReport) -> events_pb2.Grounding:
    return events_pb2.Grounding(
        numbers=[
            events_pb2.GroundedNumber(
                text=checked.number.text,
                value=checked.number.value,
                unit=checked.number.unit,
                start=checked.number.start,
                end=checked.number.end,
                supported=checked.supported,
                call_id=checked.call_id,
                tool_name=checked.tool_name,
                source_value=checked.source_value,
                match=checked.match,
            )
            for checked in report.numbers
        ],
        supported_count=report.supported_count,
        unsupported_count=report.unsupported_count,
    )
