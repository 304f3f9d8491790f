"""The checks a draft answer passes before it stands (`DraftReview.review`). A draft that fails one is
withdrawn once, with a correction the model reads (numbers no tool gave, a class the data gives but
the draft leaves out, advice after a failed call, a call described instead of made, instructions for
a call already made), or is replaced on the user's screen (what the catalogue cannot answer, the
results themselves, "no data", a concept question's passages)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from stacgis_common.answer import mentions
from stacgis_common.arguments import still_loading_of

from . import metrics
from .grounding import ToolResultText, check_answer, extract_numbers
from .llm.types import ToolCall, ToolSpec, new_call_id
from .memory import ConversationMemory
from .premises import Catalog, Gap
from .prompts import (
    DESCRIBED_CALL,
    FAILED_CALL,
    NO_DATA_ANSWER,
    READ_THE_RESULT,
    STILL_LOADING_ANSWER,
    UNGROUNDED_DRAFT,
    UNSTATED_CLASS,
    passages_answer,
    results_summary,
)
from .questions import is_concept_question
from .run_context import AnswerText, RunFindings, RunInput
from .settings import OrchestratorSettings
from .tool_step import KNOWLEDGE_TOOL
from .tools.catalog import ToolCatalog

# An answer telling the user what to do, where the model should have done it.
ADVICE = re.compile(
    r"\b(you (should|need to|can|could|may|must)|please (provide|specify|select|use|try)|try (using|again))\b",
    re.IGNORECASE,
)


# A draft that passes on that the data is still being loaded.
LOADING_WORDS = re.compile(r"\b(still (being )?load(ing|ed)|being loaded|not (yet )?loaded)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Withdrawal:
    """A draft to take back: `reason` for the activity feed, `correction` as the user's next words,
    and `fix`, a call to make at once (the one collection the advice names)."""

    draft: str
    reason: str
    correction: str
    fix: ToolCall | None = None


class DraftReview:
    """The checks of one run's draft answers; each kind of withdrawal is made once."""

    def __init__(
        self,
        settings: OrchestratorSettings,
        run: RunInput,
        found: RunFindings,
        answer: AnswerText,
        catalog: ToolCatalog,
    ) -> None:
        self.settings = settings
        self.run = run
        self.found = found
        self.answer = answer
        self.catalog = catalog
        # Set once an ungrounded draft answer was withdrawn: the next answer stands.
        self.draft_withdrawn = not settings.grounding_retry
        self.failure_retried = not settings.grounding_retry

    def review(self, visible: str, offered: list[ToolSpec], forced: bool, final_step: bool) -> str | Withdrawal:
        """The draft to withdraw, or the text that stands (replaced on screen where a check says so)."""
        loading = self._still_loading()
        if loading is not None:
            # Nothing to fix or retry: the data comes in minutes. Said plainly unless the draft says it.
            if LOADING_WORDS.search(visible):
                return visible
            return self.answer.replace(
                STILL_LOADING_ANSWER.format(what=loading), "the data the call needs is still loading", whole=True
            )
        if not final_step and not self.draft_withdrawn and visible.strip():
            invented = self._invented_numbers(visible)
            unstated = [] if invented else self._unstated_classes(visible)
            if invented:
                self.draft_withdrawn = True
                numbers = ", ".join(invented)
                correction = UNGROUNDED_DRAFT.format(numbers=numbers, question=self.run.message)
                return Withdrawal(visible, f"no tool result gave {numbers}", correction)
            if unstated:
                self.draft_withdrawn = True
                classes = "; ".join(unstated)
                correction = UNSTATED_CLASS.format(classes=classes, question=self.run.message)
                return Withdrawal(visible, f"the data gives the class {classes}", correction)
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
            # The advice names the one collection to use: make that call, as advised.
            fix = self._advised_fix(visible)
            return Withdrawal(visible, "the call failed and was not tried again", correction, fix)
        described = [] if forced or self.failure_retried else self._described_tools(visible, offered)
        if described:
            # The model wrote what to call instead of calling it: once, it is told to make the call.
            self.failure_retried = True
            names = ", ".join(described)
            correction = DESCRIBED_CALL.format(tools=names, question=self.run.message)
            return Withdrawal(visible, f"the answer describes a call to {names}", correction)
        if self._advises_its_own_call(visible):
            if not forced and not self.failure_retried:
                self.failure_retried = True
                correction = READ_THE_RESULT.format(question=self.run.message)
                return Withdrawal(visible, "the answer tells how to make a call already made", correction)
            # Told once, it did so again: the results themselves say more than instructions.
            visible = self.answer.replace(
                self.results_summary(), "the answer told how to call a tool, not its result", whole=True
            )
        if (self.draft_withdrawn or final_step) and self._guessed(visible):
            visible = self.answer.replace(NO_DATA_ANSWER, "no tool result gave its numbers", whole=True)
        elif (self.draft_withdrawn or final_step or self._shows_a_call(visible)) and (
            passages := self._passages_instead(visible)
        ):
            visible = self.answer.replace(passages, "the draft did not answer from the passages", whole=True)
        return visible

    def _still_loading(self) -> str | None:
        """What the last calls' errors say is still being loaded (`still_loading`), when one says so."""
        return next(filter(None, map(still_loading_of, self.found.step_failures)), None)

    def withdraw(self, memory: ConversationMemory, withdrawal: Withdrawal) -> None:
        """Take this step's text back from the answer: the UI replaces what it showed, and the
        history never keeps it (it stays in this run's working memory, followed by the correction as
        the user's words, so the model sees its mistake)."""
        memory.add_assistant(withdrawal.draft)
        memory.add_user(withdrawal.correction)
        self.answer.withdraw_step(withdrawal.reason)

    def grounding_sources(self) -> list[ToolResultText]:
        """This run's tool results, then those of earlier turns (a follow-up may quote them)."""
        earlier = [
            ToolResultText(m.tool_call_id or "", m.name or "", m.content)
            for m in self.run.history
            if m.role == "tool" and m.content
        ]
        return [*self.found.tool_texts, *earlier]

    def results_summary(self) -> str:
        """This run's tool results, shaped short: what the user reads when no answer stands."""
        results = [(r.tool_name, r.text) for r in self.found.tool_texts]
        return results_summary(results, self.settings.max_tool_result_chars)

    def _invented_numbers(self, text: str) -> list[str]:
        report = check_answer(text, self.grounding_sources(), self.run.message, self.found.catalog_text)
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
        if self.grounding_sources() or not draft.strip():
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
        return any(re.search(rf"(?<![\w-]){re.escape(tool.name)}\s*\(", draft) for tool in self.catalog.all())

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
                for g in self.found.catalogue_gaps
                if g.kind == "variable" and not any(mentions(r.text, g.missing) for r in self.found.tool_texts)
            ]
            return next((g for g in unspoken if not g.answered_by(draft)), None)
        gaps = [*self.found.catalogue_gaps, *filter(None, self.found.place_gaps.values())]
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
        return in_collection(failed[0], named.pop(), self.found.catalog)


def in_collection(call: ToolCall, collection_id: str, catalog: Catalog) -> ToolCall | None:
    """`call` made again on `collection_id`, when it named a collection and that is another one of the
    catalogue: the fix of a failed call, whether the model's advice or the tool's error names the
    collection. A call with no `collection_id` (a tool taking a list of them) is never given one."""
    tried = call.arguments.get("collection_id")
    if not isinstance(tried, str) or tried == collection_id or collection_id not in catalog.collections:
        return None
    return ToolCall(new_call_id(), call.name, {**call.arguments, "collection_id": collection_id})


def _plain(text: str) -> str:
    """Lower case with `-` and `_` as spaces: "luxembourg-dem" is "the Luxembourg DEM" of an answer."""
    return text.lower().replace("-", " ").replace("_", " ")


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None
