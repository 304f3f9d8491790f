"""The task suite: its schema, loading and selection.

A task is a question put to the agent as a new user, with what makes an answer right: the tools
(alternative sets, each fully called), an expectation given as a computation (see oracle.py), the
unit and tolerance of a numeric answer, or `refuse: true` and the things a refusal must name. The
`script` is the right course of action written out (tool calls, then an answer template quoting the
tool results): the scripted model plays it to prove the harness and the stack.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .answers import Tolerance

TASKS_FILE = Path(__file__).with_name("tasks.yaml")

Kind = Literal["single", "multi", "comparison", "place", "scenes", "map", "knowledge", "memory", "refusal"]
KINDS: tuple[str, ...] = get_args(Kind)


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # One call per step, in order; arguments may hold the model server's placeholders.
    calls: list[Call] = Field(default_factory=list)
    answer: str = Field(min_length=1)


class ToleranceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rel: float = Field(default=0.0, ge=0)
    abs: float = Field(default=0.0, ge=0)


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{1,63}$")
    kind: Kind
    question: str = Field(min_length=3)
    tags: list[str] = Field(default_factory=list)
    # Messages the same user sends first, each in a new session (e.g. something to remember).
    setup: list[str] = Field(default_factory=list)
    # Alternatives: the task's tool use is right when every tool of one alternative was called.
    tools: list[list[str]] = Field(default_factory=list)
    expect: dict[str, Any]
    unit: str | None = None
    tolerance: ToleranceSpec = Field(default_factory=lambda: ToleranceSpec(rel=0.02))
    refuse: bool = False
    # For refusals: the answer must name one of these (what is missing).
    missing: list[str] = Field(default_factory=list)
    script: Script
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.refuse != (self.kind == "refusal"):
            raise ValueError("refuse: true goes with kind refusal, and only with it")
        if self.refuse and not self.missing:
            raise ValueError("a refusal task names what is missing in `missing`")
        if not self.refuse and not self.tools:
            raise ValueError("a solvable task lists its right tools")
        if "op" not in self.expect:
            raise ValueError("expect needs an `op`")
        return self

    @property
    def tol(self) -> Tolerance:
        return Tolerance(rel=self.tolerance.rel, abs=self.tolerance.abs)


class TaskFileError(ValueError):
    pass


def load_tasks(path: Path = TASKS_FILE) -> list[Task]:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise TaskFileError(f"cannot read {path}: {error}") from error
    if not isinstance(raw, dict) or not isinstance(raw.get("tasks"), list):
        raise TaskFileError(f"{path}: expected a mapping with a `tasks` list")
    tasks = []
    for index, entry in enumerate(raw["tasks"]):
        try:
            tasks.append(Task.model_validate(entry))
        except ValidationError as error:
            name = entry.get("id", f"#{index}") if isinstance(entry, dict) else f"#{index}"
            raise TaskFileError(f"{path}: task {name}: {error}") from error
    duplicates = [task_id for task_id, count in Counter(t.id for t in tasks).items() if count > 1]
    if duplicates:
        raise TaskFileError(f"{path}: duplicate task ids {duplicates}")
    questions = [q for q, count in Counter(t.question for t in tasks).items() if count > 1]
    if questions:
        # The scripted model tells tasks apart by their question.
        raise TaskFileError(f"{path}: duplicate questions {questions}")
    return tasks


def select(tasks: list[Task], spec: str | None) -> list[Task]:
    """Tasks named by a comma list of ids, kinds or tags (`smoke`, `refusal`, `lux-mean-elevation`).

    `kind:X`, `tag:X` and `id:X` say which one is meant; a bare word matches any of the three.
    Unknown names are an error (a typo would otherwise run nothing and pass).
    """
    if not spec or spec == "all":
        return list(tasks)
    chosen: dict[str, Task] = {}
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        field, _, value = word.partition(":") if ":" in word else ("", "", word)
        hits = [
            t
            for t in tasks
            if (field in ("", "id") and t.id == value)
            or (field in ("", "kind") and t.kind == value)
            or (field in ("", "tag") and value in t.tags)
        ]
        if not hits:
            raise TaskFileError(f"--tasks: {word!r} names no task id, kind or tag")
        for task in hits:
            chosen[task.id] = task
    return [t for t in tasks if t.id in chosen]
