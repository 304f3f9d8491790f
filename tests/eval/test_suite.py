"""The task file, the scripted rules made from it, selection, the report file and the exit status."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

import pytest

from stacgis_model_server.rules import parse_rules

from .report import END, START, write_markdown
from .run import main
from .scripted import rules_for
from .tasks import KINDS, TaskFileError, load_tasks, select


def test_the_suite_has_every_kind_and_enough_tasks() -> None:
    tasks = load_tasks()
    kinds = Counter(t.kind for t in tasks)
    assert len(tasks) >= 60, len(tasks)
    assert kinds["refusal"] >= 15, kinds
    assert set(kinds) == set(KINDS), kinds
    assert 3 <= len(select(tasks, "smoke")) <= 5


def test_every_task_makes_rules_the_model_server_accepts() -> None:
    tasks = load_tasks()
    rules = [rule for task in tasks for rule in rules_for(task)]
    parsed = parse_rules({"rules": rules})  # the model server's own schema and regex checks
    assert len(parsed) == len(rules)
    assert len({rule.name for rule in parsed}) == len(parsed), "rule names must be unique"
    # One rule per call plus the answer, plus two per setup message.
    assert len(rules) == sum(len(t.script.calls) + 1 + 2 * len(t.setup) for t in tasks)


def test_selection_by_id_kind_and_tag() -> None:
    tasks = load_tasks()
    assert [t.id for t in select(tasks, "lux-mean-elevation")] == ["lux-mean-elevation"]
    assert {t.kind for t in select(tasks, "kind:refusal")} == {"refusal"}
    both = select(tasks, "map,lux-mean-elevation")
    assert {t.kind for t in both} == {"map", "place"}
    with pytest.raises(TaskFileError, match="nothing-like-this"):
        select(tasks, "nothing-like-this")


def test_a_broken_task_file_is_refused_naming_the_task(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text(
        "tasks:\n  - {id: t1, kind: refusal, refuse: true, question: 'Snow?',"
        " expect: {op: no_collection, terms: [snow]}, script: {answer: none}}\n"
    )
    with pytest.raises(TaskFileError, match=r"(?s)task t1.*what is missing"):
        load_tasks(path)


def test_the_report_section_is_replaced_in_place(tmp_path: Path) -> None:
    page = tmp_path / "eval.md"
    page.write_text(f"# Eval\n\nintro\n\n{START}\nold table\n{END}\n\n## After\n")
    write_markdown(page, "new table\n")
    text = page.read_text()
    assert "old table" not in text and "new table" in text
    assert text.startswith("# Eval\n\nintro") and text.rstrip().endswith("## After")
    write_markdown(page, "newer table\n")
    assert page.read_text().count(START) == 1


def test_an_unreachable_stack_fails_loudly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the socket is closed
    status = main(["--base-url", f"http://127.0.0.1:{port}/api/v1", "--results", str(tmp_path / "r.json")])
    assert status == 2
    assert "cannot measure" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
