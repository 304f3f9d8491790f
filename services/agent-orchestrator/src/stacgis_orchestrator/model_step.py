"""The model step of a run: offer tools, fit the conversation to the context window, stream the model's
turn to the user (thinking, filtered answer text) and read its tool calls, native or written as text."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from stacgis_proto.v1 import events_pb2

from . import metrics
from .context_window import estimate_tokens, fit_to_context, parse_overflow
from .llm.repetition import RepetitionGuard, without_repetition
from .llm.stream_filter import ContentFilter
from .llm.text_tools import describe_tools_for_prompt, parse_json_answer, parse_tool_blocks
from .llm.types import Message, ModelError, ModelTurn, TextDelta, ThinkingDelta, ToolSpec
from .prefix import all_tools, offered_specs, snapshot_key
from .run_context import RunContext
from .tools.calls import unique_ids

log = logging.getLogger(__name__)
tracer = trace.get_tracer("stacgis_orchestrator")

# Backoff while the model server cannot be reached: first wait and cap, in seconds.
UNAVAILABLE_FIRST_WAIT_SECONDS, UNAVAILABLE_MAX_WAIT_SECONDS = 1.0, 8.0


class ModelStep:
    """Calls the model for one run; `think` is one model turn."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.deps = context.deps
        self.settings = context.settings
        self.run = context.run
        self.sink = context.sink
        self.answer = context.answer
        self.text_tools_only = not self.settings.llm_native_tools
        # The last dynamic selection and what it was made for: a run's first call and its first step
        # ask for the same query.
        self._selected: tuple[tuple[str, tuple[int, tuple[str, ...]]], list[ToolSpec]] | None = None

    async def offer_tools(self, query: str) -> list[ToolSpec]:
        if self.settings.tool_selection == "all":
            # Timed like dynamic selection (which times itself), so the dashboard shows either mode.
            started = time.perf_counter()
            offered = all_tools(self.deps.catalog, self.deps.pool, self.settings)
            metrics.TOOL_SELECTION_SECONDS.observe(time.perf_counter() - started)
            return offered
        key = (query, snapshot_key(self.deps.catalog, self.deps.pool))
        if self._selected is None or self._selected[0] != key:
            self._selected = key, await self._select_tools(query)
        return list(self._selected[1])

    async def _select_tools(self, query: str) -> list[ToolSpec]:
        catalog = self.deps.catalog
        always = catalog.always_included()
        always_names = {tool.name for tool in always}
        candidates = [t for t in catalog.mcp_tools() if t.name not in always_names and self.deps.pool.available(t)]
        with tracer.start_as_current_span("select_tools", attributes={"stacgis.candidates": len(candidates)}):
            ranked = await self.deps.selector.rank(query, candidates)
        chosen = [item.tool for item in ranked[: self.settings.tool_top_k]]
        return offered_specs([*chosen, *always], self.settings)

    async def learn_window(self) -> None:
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

    async def think(self, messages: list[Message], offered: list[ToolSpec], protect_from: int) -> tuple[ModelTurn, str]:
        """One model turn over `messages` (those from `protect_from` are never compacted); returns
        the turn and the answer text it showed the user."""
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
                return await self.think(messages, offered, protect_from)
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
                if error.code != "context_too_long" or self.answer.step_has_content:
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
                if not error.transient or self.answer.step_has_content or time.monotonic() + delay > deadline:
                    raise
                metrics.MODEL_ERRORS.labels("model_unavailable_waited").inc()
                self.context.note(f"Waiting for the model ({error.message}); trying again in {delay:g} s.\n")
                await asyncio.sleep(delay)
                await self.context.check_cancel()
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
        self.answer.begin_step()
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
            found = self.context.found
            if turn.input_tokens is not None:
                found.input_tokens += turn.input_tokens
                metrics.TOKEN_USAGE.labels(*labels, "input").observe(turn.input_tokens)
                span.set_attribute("gen_ai.usage.input_tokens", turn.input_tokens)
            if turn.output_tokens is not None:
                found.output_tokens += turn.output_tokens
                metrics.TOKEN_USAGE.labels(*labels, "output").observe(turn.output_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", turn.output_tokens)
            span.set_attribute("gen_ai.response.finish_reasons", [turn.finish_reason])
            thinking = turn.thinking + "".join(content_filter.thinking)
            answer = content_filter.answer
            if guard.tripped:
                answer = self.answer.replace(without_repetition(answer), "the model repeated itself; stopped")
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
                self.answer.add(delta.text)
