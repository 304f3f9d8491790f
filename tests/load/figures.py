"""Figures a suite measured (throughput, recovery times...), printed in pytest's terminal summary and
kept in .local/reliability/figures/<name>.md for docs/reliability.md and scripts/bench.sh."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stacgis_common.testing import REPO_ROOT

FIGURES_DIR = REPO_ROOT / ".local" / "reliability" / "figures"
PLUGIN_NAME = "stacgis-reliability-figures"


class Figures:
    def __init__(self) -> None:
        self.sections: list[tuple[str, str, list[str]]] = []  # (file name, title, lines)

    def add(self, name: str, title: str, lines: list[str]) -> None:
        self.sections.append((name, title, lines))
        FIGURES_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M")
        text = f"<!-- measured {stamp} -->\n### {title}\n\n" + "\n".join(lines) + "\n"
        Path(FIGURES_DIR / f"{name}.md").write_text(text)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for _, title, lines in self.sections:
            terminalreporter.write_sep("-", title)
            for line in lines:
                terminalreporter.write_line(line)


def figures(config: pytest.Config) -> Figures:
    """The session's collector, registered as a plugin on first use (no conftest needed)."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is None:
        plugin = Figures()
        config.pluginmanager.register(plugin, PLUGIN_NAME)
    assert isinstance(plugin, Figures)
    return plugin


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table (readable as plain text too)."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines
