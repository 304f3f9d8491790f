"""What the parts of one run share: its input, the process's dependencies, the event sink, the answer
on the user's screen and the findings of its tool calls. The step loop (`loop.py`), the model step
(`model_step.py`) and the tool step (`tool_step.py`) each take one `RunContext`."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import propagate

from stacgis_common.auth import Identity, mint_for
from stacgis_proto.v1 import events_pb2

from . import metrics
from .context_sources import ResourceCache
from .context_window import ModelBudget
from .events import EventSink
from .grounding import ToolResultText
from .llm.base import ChatProvider
from .llm.types import Message, ToolCall
from .premises import Catalog, Gap
from .settings import OrchestratorSettings
from .tools.catalog import ToolCatalog
from .tools.pool import ToolPool
from .tools.selection import ToolSelector

log = logging.getLogger(__name__)


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


class AnswerText:
    """The answer as the user sees it, written step by step; a step's text can be replaced or taken back."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.parts: list[str] = []
        self.step_has_content = False
        self.step_start = 0

    def text(self) -> str:
        return "".join(self.parts)

    def begin_step(self) -> None:
        self.step_has_content = False
        self.step_start = len(self.parts)

    def add(self, text: str) -> None:
        if not text:
            return
        if not self.step_has_content and self.parts:
            # Text of an earlier step is already on screen: start this step's text on a new paragraph.
            text = "\n\n" + text
        self.step_has_content = True
        self.parts.append(text)
        self.sink.emit(content=events_pb2.ContentDelta(text=text))

    def replace(self, text: str, reason: str, whole: bool = False) -> str:
        """Put `text` in place of this step's answer on the user's screen (`whole`: of everything the
        run showed, text written beside earlier calls included); returns the new step text."""
        if whole:
            self.step_start = 0
        del self.parts[self.step_start :]
        self.parts.append(("\n\n" if self.parts else "") + text)
        self.step_has_content = True
        self.sink.emit(content=events_pb2.ContentDelta(text=self.text(), replace=True))
        self.sink.emit(thinking=events_pb2.Thinking(text=f"Draft replaced: {reason}.\n"))
        return text

    def withdraw_step(self, reason: str) -> None:
        """Take this step's text back: the UI replaces what it showed."""
        del self.parts[self.step_start :]
        self.step_has_content = False
        self.sink.emit(content=events_pb2.ContentDelta(text=self.text(), replace=True))
        self.sink.emit(thinking=events_pb2.Thinking(text=f"Draft withdrawn: {reason}. Looking again.\n"))
        metrics.DRAFTS_WITHDRAWN.inc()


@dataclass
class RunFindings:
    """What the run's calls found out, read by the step loop's checks of a draft answer."""

    # Successful tool results of this run, for grounding and the fallback summary.
    tool_texts: list[ToolResultText] = field(default_factory=list)
    tool_call_count: int = 0
    called: set[str] = field(default_factory=set)  # names of every tool the model called, run or refused
    input_tokens: int = 0
    output_tokens: int = 0
    # Set when the model repeats a call: the next step must answer.
    force_answer: bool = False
    # Errors of the last step when none of its calls succeeded (a fix may be asked for, once).
    step_failures: list[str] = field(default_factory=list)
    step_failed_calls: list[ToolCall] = field(default_factory=list)
    # The raster catalogue, for checking that an answer's data covers the question.
    catalog: Catalog = field(default_factory=Catalog)
    # The catalogue summaries the model was given (numbers there count as given).
    catalog_text: str = ""
    # Set when the run began with a knowledge search for a concept question: the passages answer it.
    concept_searched: bool = False
    # Data tool calls of a concept question, refused as not needed (the model wanted a demonstration).
    not_needed: list[ToolCall] = field(default_factory=list)
    # Set once a call asked for raster data (a collection_id), whether or not it succeeded.
    data_asked: bool = False
    # What the catalogue as a whole cannot answer of the question (`premises.catalogue_gaps`), found
    # once as the run starts (empty with the premise check off): the run's context and the draft
    # review both read it.
    catalogue_gaps: list[Gap] = field(default_factory=list)
    # Places of this run's calls that the question names, with what the catalogue lacks there.
    place_gaps: dict[str, Gap | None] = field(default_factory=dict)
    place_areas: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    memories: list[str] = field(default_factory=list)  # the user's long-term memories relevant to this message


class RunContext:
    """One run's input, dependencies, sink, answer and findings, and the few things every part does."""

    def __init__(self, deps: AgentDeps, run: RunInput, sink: EventSink) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.run = run
        self.sink = sink
        self.answer = AnswerText(sink)
        self.found = RunFindings()
        self.cancel_requested = False
        self._minted: tuple[float, str] | None = None  # (monotonic time, token)

    def note(self, text: str) -> None:
        """A line in the activity feed (a thinking event)."""
        self.sink.emit(thinking=events_pb2.Thinking(text=text))

    def headers(self) -> dict[str, str]:
        """The headers of a call on the run's behalf: its internal token and the current trace context."""
        headers = {"Authorization": f"Bearer {self._token()}"}
        propagate.inject(headers)
        return headers

    def _token(self) -> str:
        """The run's internal token: minted once (about 0.1 ms a token) and again after half its lifetime."""
        now = time.monotonic()
        if self._minted is None or now - self._minted[0] >= self.settings.internal_token_ttl_seconds / 2:
            self._minted = now, mint_for(self.settings, self.run.identity)
        return self._minted[1]

    async def check_cancel(self, read: bool = True) -> None:
        """End the run if a cancel was requested: known here (pub/sub), or, with `read`, in Redis."""
        if read and not self.cancel_requested:
            try:
                self.cancel_requested = await self.deps.coordinator.cancel_requested(self.run.run_id)
            except Exception:
                log.warning("cannot read the cancel flag of run %s", self.run.run_id, exc_info=True)
        if self.cancel_requested:
            raise asyncio.CancelledError
