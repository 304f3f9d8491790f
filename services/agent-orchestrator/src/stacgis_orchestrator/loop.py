"""The ReAct loop of one run: think (`model_step`), act (`tool_step`), observe (results into the
conversation memory), and respond once the draft answer passes its checks (`draft_review`). The
conversation it starts from is `run_memory`'s; its own first call, `first_calls`'."""

from __future__ import annotations

import asyncio
import logging
import time

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from stacgis_common.arguments import retry_hint
from stacgis_proto.v1 import events_pb2

from . import metrics
from .draft_review import DraftReview, Withdrawal, in_collection
from .events import EventSink, grounding_proto, message_to_proto
from .first_calls import first_call, with_note
from .grounding import check_answer
from .llm.types import Message, ModelError, ToolCall, ToolSpec
from .memory import ConversationMemory, consistent_history
from .model_step import ModelStep
from .prompts import FORCE_ANSWER, FORCE_ANSWER_AGAIN
from .run_context import AgentDeps, RunContext, RunInput
from .run_memory import prepare_memory
from .tool_step import ToolStep

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
# Seconds after its start from which a run's first step reads the cancel flag from Redis.
CANCEL_READ_AFTER = 1.0


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
        self.hint_followed = False
        self.review = DraftReview(self.settings, run, self.found, self.answer, deps.catalog)

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
                    check_answer(answer, self.review.grounding_sources(), self.run.message, found.catalog_text)
                ),
            )
        )

    def _error(self, code: str, message: str) -> None:
        self.outcome = "error"
        self.sink.emit(error=events_pb2.Error(code=code, message=message))

    # The loop.

    async def _steps(self) -> str:
        memory = await prepare_memory(self.context, self.model)
        await self._first_call(memory)
        last_thought = ""
        for step in range(1, self.run.max_steps + 1):
            # The run's record was written as it started and a cancel since then came by pub/sub: the
            # first step reads it again only after a slow start (a pub/sub message can be lost).
            await self.context.check_cancel(read=step > 1 or time.monotonic() - self.started >= CANCEL_READ_AFTER)
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
                verdict = self.review.review(visible, offered, forced, final_step)
                if isinstance(verdict, Withdrawal):
                    self.review.withdraw(memory, verdict)
                    if verdict.fix is not None:
                        await self._run_calls(memory, "", [verdict.fix], offered)
                    continue
                visible = verdict
                if not visible.strip():
                    if self.found.tool_texts:
                        fallback = self.review.results_summary()
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
        starts with (`first_calls`)."""
        if not self.settings.first_calls:
            return
        first = first_call(self.run.message, self.deps.catalog)
        if first is None:
            return
        self.sink.emit(thinking=events_pb2.Thinking(text=first.why + "\n"))
        self.found.concept_searched = first.concept_search
        await self._run_calls(memory, "", [first.call], await self.model.offer_tools(self.run.message), first.closing)

    async def _run_calls(
        self, memory: ConversationMemory, text: str, calls: list[ToolCall], offered: list[ToolSpec], note: str = ""
    ) -> None:
        """Record an assistant turn with `calls`, run them and record their results (each followed by
        `note`, a line for the model)."""
        self.new_messages.append(memory.add_assistant(text, calls))
        for result in await self.tools.act(calls, offered):
            content = with_note(result.content, note) if note else result.content
            message, _ = memory.add_tool_result(result.tool_call_id or "", result.name or "", content)
            self.new_messages.append(message)
        fix = self._hinted_fix()
        if fix is not None:
            self.sink.emit(thinking=events_pb2.Thinking(text=f"Calling {fix.name} again as its error advised.\n"))
            await self._run_calls(memory, "", [fix], offered)

    def _hinted_fix(self) -> ToolCall | None:
        """Once per run: the step's only failed call again with the collection its error names as the
        one to use (`stacgis_common.arguments.retry_with`). Told "olinda-dem covers Olinda", the
        1.5B model guessed an elevation instead of calling again (eval run 23)."""
        failed = list(zip(self.found.step_failed_calls, self.found.step_failures, strict=True))
        if self.hint_followed or len(failed) != 1:
            return None
        call, error = failed[0]
        hint = retry_hint(error)
        fix = in_collection(call, hint[1], self.found.catalog) if hint and hint[0] == "collection_id" else None
        self.hint_followed = fix is not None
        return fix

    def _withhold(self, calls: list[ToolCall]) -> None:
        names = ", ".join(call.name for call in calls)
        log.info("run %s: the model called %s on a forced step; not run", self.run.run_id, names)
