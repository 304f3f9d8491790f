"""The ReAct loop of one run: think (`model_step`), act (`tool_step`), observe (results into the
conversation memory), and respond, with the checks a draft answer passes before it stands."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from stacgis_common.answer import mentions
from stacgis_proto.v1 import events_pb2

from . import metrics
from .context_sources import CATALOG_RESOURCE, fetch_memories
from .events import EventSink, message_to_proto
from .grounding import GroundingReport, ToolResultText, check_answer, extract_numbers
from .llm.types import Message, ModelError, ToolCall, ToolSpec, new_call_id
from .memory import ConversationMemory, consistent_history
from .model_step import ModelStep
from .premises import Catalog, Gap, catalogue_gaps
from .prompts import (
    DESCRIBED_CALL,
    FAILED_CALL,
    FORCE_ANSWER,
    FORCE_ANSWER_AGAIN,
    KNOWLEDGE_ANSWER,
    NO_DATA_ANSWER,
    READ_THE_RESULT,
    UNGROUNDED_DRAFT,
    UNSTATED_CLASS,
    passages_answer,
    results_summary,
    run_context_message,
    spatial_context_message,
    system_prompt,
)
from .questions import is_concept_question, is_recall_question, memory_note
from .run_context import AgentDeps, RunContext, RunInput
from .tool_step import KNOWLEDGE_TOOL, ToolStep

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
KNOWLEDGE_FIRST_LIMIT = 3
MEMORY_TOOL = "add_memory"
RECALL_TOOL = "search_memories"
# An answer telling the user what to do, where the model should have done it.
ADVICE = re.compile(
    r"\b(you (should|need to|can|could|may|must)|please (provide|specify|select|use|try)|try (using|again))\b",
    re.IGNORECASE,
)


class AgentRun:
    """One run: emits events into `sink`, returns when the run has ended (its last event sent)."""

    def __init__(self, deps: AgentDeps, run: RunInput, sink: EventSink) -> None:
        self.context = RunContext(deps, run, sink)
        self.deps = deps
        self.settings = deps.settings
        self.run = run
        self.sink = sink
        self.answer = self.context.answer
        self.found = self.context.found
        self.model = ModelStep(self.context)
        self.tools = ToolStep(self.context)
        self.started = time.monotonic()
        self.acted = False
        self.steps = 0
        self.new_messages: list[Message] = []
        self.outcome = "error"
        # Set once an ungrounded draft answer was withdrawn: the next answer stands.
        self.draft_withdrawn = not self.settings.grounding_retry
        self.failure_retried = not self.settings.grounding_retry

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
                if self.context.cancel_requested and task is not None:
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
        self.context.cancel_requested = True

    def _done(self, finish: str) -> None:
        self.outcome = finish
        answer = self.answer.text()
        found = self.found
        self.sink.emit(
            done=events_pb2.Done(
                content=answer,
                # A cancel can leave a tool call without its result: keep history consistent.
                new_messages=[message_to_proto(m) for m in consistent_history(self.new_messages)],
                usage=events_pb2.TokenUsage(input_tokens=found.input_tokens, output_tokens=found.output_tokens),
                steps=self.steps,
                tool_calls=found.tool_call_count,
                finish_reason=finish,
                duration_ms=int((time.monotonic() - self.started) * 1000),
                grounding=grounding_proto(
                    check_answer(answer, self._grounding_sources(), self.run.message, found.catalog_text)
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
        return [*self.found.tool_texts, *earlier]

    def _error(self, code: str, message: str) -> None:
        self.outcome = "error"
        self.sink.emit(error=events_pb2.Error(code=code, message=message))

    # The loop.

    async def _steps(self) -> str:
        memory = await self._prepare_memory()
        await self._first_call(memory)
        last_thought = ""
        for step in range(1, self.run.max_steps + 1):
            await self.context.check_cancel()
            self.sink.step = step
            self.steps = step
            final_step = step == self.run.max_steps
            forced = final_step or self.found.force_answer
            with tracer.start_as_current_span(
                "agent_step", attributes={"stacgis.step": step, "stacgis.forced": forced}
            ):
                # The same tools are offered on a forced step: withholding them would change the prefix.
                offered = await self.model.offer_tools(f"{self.run.message} {last_thought}".strip())
                messages = memory.get_messages()
                if forced:
                    messages = [*messages, Message(role="user", content=FORCE_ANSWER)]
                turn, visible = await self.model.think(messages, offered, memory.current_request_index())
                last_thought = (turn.thinking or visible)[-LAST_THOUGHT_CHARS:]
                if turn.tool_calls and not forced:
                    self.acted = True
                    await self._run_calls(memory, visible, turn.tool_calls, offered)
                    continue
                if turn.tool_calls and not visible.strip():
                    # A forced step's calls are never run: ask once more, then summarise the results.
                    self._withhold(turn.tool_calls)
                    messages = [*messages, Message(role="user", content=FORCE_ANSWER_AGAIN)]
                    turn, visible = await self.model.think(messages, offered, memory.current_request_index())
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
                    visible = self.answer.replace(gap.refusal, f"the data does not cover {gap.missing}", whole=True)
                if not forced and not self.failure_retried and self.found.step_failures and ADVICE.search(visible):
                    # The last calls all failed and the model told the user what to do instead of
                    # fixing the call ("you should use the bcsd-temperature-1999 collection").
                    self.failure_retried = True
                    correction = FAILED_CALL.format(error=self.found.step_failures[0][:400], question=self.run.message)
                    self._withdraw_draft("the call failed and was not tried again", memory, visible, correction)
                    fix = self._advised_fix(visible)
                    if fix is not None:
                        # The advice names the one collection to use: make that call, as advised.
                        await self._run_calls(memory, "", [fix], offered)
                    continue
                described = [] if forced or self.failure_retried else self._described_tools(visible, offered)
                if described:
                    # The model wrote what to call instead of calling it: once, it is told to make the call.
                    self.failure_retried = True
                    names = ", ".join(described)
                    correction = DESCRIBED_CALL.format(tools=names, question=self.run.message)
                    self._withdraw_draft(f"the answer describes a call to {names}", memory, visible, correction)
                    continue
                if self._advises_its_own_call(visible):
                    if not forced and not self.failure_retried:
                        self.failure_retried = True
                        correction = READ_THE_RESULT.format(question=self.run.message)
                        self._withdraw_draft(
                            "the answer tells how to make a call already made", memory, visible, correction
                        )
                        continue
                    # Told once, it did so again: the results themselves say more than instructions.
                    visible = self.answer.replace(
                        self._results_summary(), "the answer told how to call a tool, not its result", whole=True
                    )
                if (self.draft_withdrawn or final_step) and self._guessed(visible):
                    visible = self.answer.replace(NO_DATA_ANSWER, "no tool result gave its numbers", whole=True)
                elif (self.draft_withdrawn or final_step or self._shows_a_call(visible)) and (
                    passages := self._passages_instead(visible)
                ):
                    visible = self.answer.replace(passages, "the draft did not answer from the passages", whole=True)
                if not visible.strip():
                    if self.found.tool_texts:
                        fallback = self._results_summary()
                    elif final_step and turn.tool_calls:
                        fallback = f"I could not finish within the budget of {self.run.max_steps} steps."
                    else:
                        fallback = "The model returned an empty answer."
                    self.answer.add(fallback)
                    visible = fallback
                self.new_messages.append(memory.add_assistant(visible))
                return "step_budget" if final_step and self.acted else "completed"
        raise AssertionError("the step loop always returns")  # max_steps >= 1

    async def _first_call(self, memory: ConversationMemory) -> None:
        """The call a concept question, a request to remember or a question about what the user told
        starts with (`questions`)."""
        if not self.settings.first_calls:
            return
        note = memory_note(self.run.message)
        arguments: dict[str, Any]
        if note is not None:
            tool, arguments, why = MEMORY_TOOL, {"content": note[0], "kind": note[1]}, "A note to remember: saving it."
        elif is_concept_question(self.run.message):
            tool, arguments = KNOWLEDGE_TOOL, {"query": self.run.message, "limit": KNOWLEDGE_FIRST_LIMIT}
            why = "A question about a concept: searching the knowledge base."
        elif is_recall_question(self.run.message):
            tool, arguments = RECALL_TOOL, {"query": self.run.message}
            why = "A question about what you told me: searching your memories."
        else:
            return
        if self.deps.catalog.get(tool) is None:
            return
        self.sink.emit(thinking=events_pb2.Thinking(text=why + "\n"))
        call = ToolCall(new_call_id(), tool, arguments)
        closing = KNOWLEDGE_ANSWER if tool == KNOWLEDGE_TOOL else ""
        self.found.concept_searched = tool == KNOWLEDGE_TOOL
        await self._run_calls(memory, "", [call], await self.model.offer_tools(self.run.message), closing)

    async def _run_calls(
        self, memory: ConversationMemory, text: str, calls: list[ToolCall], offered: list[ToolSpec], note: str = ""
    ) -> None:
        """Record an assistant turn with `calls`, run them and record their results (each followed by
        `note`, a line for the model)."""
        self.new_messages.append(memory.add_assistant(text, calls))
        for result in await self.tools.act(calls, offered):
            content = _with_note(result.content, note) if note else result.content
            message, _ = memory.add_tool_result(result.tool_call_id or "", result.name or "", content)
            self.new_messages.append(message)

    def _invented_numbers(self, text: str) -> list[str]:
        report = check_answer(text, self._grounding_sources(), self.run.message, self.found.catalog_text)
        return [checked.number.text for checked in report.numbers if not checked.supported]

    def _unstated_classes(self, draft: str) -> list[str]:
        """The classes point queries of this run gave (`class_at_point`), when the draft names none."""
        classes: list[str] = []
        for result in self.found.tool_texts:
            try:
                data = json.loads(result.text)
            except ValueError:
                continue
            named = data.get("class_at_point") if isinstance(data, dict) else None
            if isinstance(named, str):
                classes += [part.split(" (band ")[0].strip() for part in named.split(";")]
        lowered = draft.lower()
        return [] if any(c.lower() in lowered for c in classes) else classes

    def _guessed(self, draft: str) -> bool:
        """A draft with numbers when no tool result of this run or the conversation holds any, and no
        memory of the user has them: every number in it is the model's guess (checked once the model
        was told so, or on the last step; a concept question's answer is left alone)."""
        if not self.settings.grounding_retry or is_concept_question(self.run.message):
            return False
        if self._grounding_sources() or not draft.strip():
            return False
        remembered = " ".join(self.found.memories)
        return any(number not in remembered for number in self._invented_numbers(draft))

    def _passages_instead(self, draft: str) -> str | None:
        """For a concept question answered after its knowledge search: the passages themselves, when
        the draft still has numbers no passage or tool result gives once the model was told so (a
        1.5B model asked how border cells count wrote an example run's "mean elevation of 100 m"), or
        shows how to call a tool instead of explaining (`_shows_a_call`)."""
        if not self.settings.grounding_retry or not self.found.concept_searched or not draft.strip():
            return None
        if not self._invented_numbers(draft) and not self._shows_a_call(draft):
            return None
        searches = [(r.tool_name, r.text) for r in self.found.tool_texts if r.tool_name == KNOWLEDGE_TOOL]
        return passages_answer(searches, self.settings.max_tool_result_chars)

    def _shows_a_call(self, draft: str) -> bool:
        """A concept question's draft written as a tool call ("call `compute_zonal_stats(collection_id=
        ...)`"): asked what zonal statistics are and how border cells count, the 1.5B model showed a
        call on Luxembourg and never said what the passages say (eval run 18, knowledge-zonal). Or one
        about a data call the model made and was refused: told the call was not needed, it described it
        in prose (eval run 19) or gave "the zonal statistics for the Luxembourg DEM" (eval run 20): the
        draft names the tool, or a place or collection of that call's that the question does not."""
        if not self.found.concept_searched:
            return False
        if any(_names(draft, name) for name in self.found.called - {KNOWLEDGE_TOOL}):
            return True
        asked, written = _plain(self.run.message), _plain(draft)
        for call in self.found.not_needed:
            values = [_plain(v) for v in call.arguments.values() if isinstance(v, str) and len(v) > 2]
            if any(v not in asked and v in written for v in values):
                return True
        return any(re.search(rf"(?<![\w-]){re.escape(tool.name)}\s*\(", draft) for tool in self.deps.catalog.all())

    def _results_summary(self) -> str:
        """This run's tool results, shaped short: what the user reads when no answer stands."""
        results = [(r.tool_name, r.text) for r in self.found.tool_texts]
        return results_summary(results, self.settings.max_tool_result_chars)

    def _advises_its_own_call(self, draft: str) -> bool:
        """A draft telling the user to call a tool ("you can use the `query_scene_timeseries` function
        with ...") that this run already called with a result: the answer is in that result (eval run
        20, scenes-wettest-month-box). A concept question's answer is left to `_shows_a_call`."""
        if not self.found.tool_texts or self.found.concept_searched or not ADVICE.search(draft):
            return False
        return any(_names(draft, name) for name in self.found.called)

    def _described_tools(self, draft: str, offered: list[ToolSpec]) -> list[str]:
        """Offered tools the draft names that this run never called: an answer naming a tool it never
        called describes the call instead of making it. A name a result quotes (a knowledge
        passage about the tools) and a concept question's answer are left alone."""
        if is_concept_question(self.run.message):
            return []
        results = self.found.tool_texts
        called = self.found.called
        named = [spec.name for spec in offered if spec.name not in called and _names(draft, spec.name)]
        return [name for name in named if not any(_names(result.text, name) for result in results)]

    def _premise_gap(self, draft: str) -> Gap | None:
        """What the catalogue cannot answer of the question (`premises`), for a draft that does not
        already say so. Runs that asked for raster data (a call with a collection, even one that
        failed) are checked for every gap. Others for a place the question names that a call looked
        up, and for a variable no collection holds when the draft gives numbers and no tool result
        of the run speaks of the variable ("the PM2.5 level in Berlin" answered with Berlin's
        coordinates); a concept question's answer is never replaced. A draft that names the gap
        itself stands, unless it quotes numbers no tool gave."""
        if not self.settings.premise_check or not draft.strip():
            return None
        if not self.found.data_asked:
            if is_concept_question(self.run.message):
                return None
            # A place the question names that no collection of the variable reaches ("land cover at
            # Nairobi" answered after a boundary lookup): checked for any call with that place.
            known = self.found.place_gaps.values()
            placed = next((g for g in known if g is not None and not g.answered_by(draft)), None)
            if placed is not None or not extract_numbers(draft):
                return placed
            unspoken = [
                g
                for g in catalogue_gaps(self.run.message, self.found.catalog)
                if g.kind == "variable" and not any(mentions(r.text, g.missing) for r in self.found.tool_texts)
            ]
            return next((g for g in unspoken if not g.answered_by(draft)), None)
        gaps = [*catalogue_gaps(self.run.message, self.found.catalog), *filter(None, self.found.place_gaps.values())]
        gap = next(iter(gaps), None)
        if gap is None or not gap.answered_by(draft):
            return gap
        # A draft that says what is missing but also writes numbers no tool gave (Berlin's coordinates
        # and a collection's extent from an error, beside "you cannot query PM2.5") gives way to the
        # plain refusal.
        return gap if self._invented_numbers(draft) else None

    def _advised_fix(self, advice: str) -> ToolCall | None:
        """The failed call again with the one other collection id the advice names, if it names one."""
        failed = [c for c in self.found.step_failed_calls if isinstance(c.arguments.get("collection_id"), str)]
        if len(failed) != 1:
            return None
        tried = failed[0].arguments["collection_id"]
        named = {cid for cid in self.found.catalog.collections if cid != tried and _names(advice, cid)}
        if len(named) != 1:
            return None
        return ToolCall(new_call_id(), failed[0].name, {**failed[0].arguments, "collection_id": named.pop()})

    def _withdraw_draft(self, reason: str, memory: ConversationMemory, draft: str, correction: str) -> None:
        """Take this step's text back from the answer: the UI replaces what it showed, and the
        history never keeps it (it stays in this run's working memory, followed by `correction` as
        the user's words, so the model sees its mistake)."""
        memory.add_assistant(draft)
        memory.add_user(correction)
        self.answer.withdraw_step(reason)

    def _withhold(self, calls: list[ToolCall]) -> None:
        names = ", ".join(call.name for call in calls)
        log.info("run %s: the model called %s on a forced step; not run", self.run.run_id, names)

    async def _prepare_memory(self) -> ConversationMemory:
        memory = ConversationMemory(self.settings.history_window, self.settings.max_tool_result_chars)
        headers = self.context.headers()
        resources, self.found.memories, _ = await asyncio.gather(
            self._resources(headers),
            fetch_memories(self.deps.pool, self.settings, self.run.message, headers),
            self.model.learn_window(),
        )
        # The prefix: only what every run shares. Per-run context follows the history.
        memory.add_system(system_prompt(resources, self.settings.place_names))
        self.found.catalog_text = "\n".join(resources.values())
        self.found.catalog = Catalog.from_resource(self.deps.resources.raw(CATALOG_RESOURCE))
        gaps = catalogue_gaps(self.run.message, self.found.catalog) if self.settings.premise_check else []
        spatial = self.run.spatial
        context = spatial_context_message(
            spatial.center, spatial.zoom, spatial.selected_feature, spatial.drawn_geometry
        )
        for message in consistent_history(self.run.history):
            memory.add(message)
        memory.add_user(run_context_message(self.run.max_steps, self.found.memories, context, [g.note for g in gaps]))
        memory.add_user(self.run.message)
        return memory

    async def _resources(self, headers: dict[str, str]) -> dict[str, str]:
        try:
            await self.deps.pool.refresh_stale()
            return await self.deps.resources.get(headers)
        except Exception:
            log.warning("context resources unavailable", exc_info=True)
            return {}


def _plain(text: str) -> str:
    """Lower case with `-` and `_` as spaces: "luxembourg-dem" is "the Luxembourg DEM" of an answer."""
    return text.lower().replace("-", " ").replace("_", " ")


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


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
