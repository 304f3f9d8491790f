"""The contract in proto/ stays lint-clean, backward compatible with main, and matches its generated Python."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROTO = Path(__file__).resolve().parents[1]
REPO = PROTO.parent
BUF = PROTO / "node_modules" / ".bin" / "buf"


def run_buf(*args: str) -> subprocess.CompletedProcess[str]:
    if not BUF.exists():
        pytest.fail("buf is not installed: run `npm ci --prefix proto`")
    return subprocess.run([str(BUF), *args], cwd=PROTO, capture_output=True, text=True, timeout=120)


def test_buf_lint_passes() -> None:
    result = run_buf("lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_format_is_clean() -> None:
    result = run_buf("format", "--diff", "--exit-code")
    assert result.returncode == 0, "run `proto/node_modules/.bin/buf format -w` in proto/:\n" + result.stdout


def test_no_breaking_change_against_main() -> None:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to compare with")
    has_main = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "main:proto/buf.yaml"], cwd=REPO, capture_output=True
    )
    if has_main.returncode != 0:
        pytest.skip("branch main has no proto/ yet")
    result = run_buf("breaking", "--against", f"{REPO}/.git#branch=main,subdir=proto")
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_python_matches_a_fresh_generation() -> None:
    result = subprocess.run(
        [sys.executable, str(PROTO / "python" / "generate.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_breaking_check_catches_a_renumbered_field(tmp_path: Path) -> None:
    """The check has teeth: changing a field number in a copy of the contract fails it."""
    copy = tmp_path / "proto"
    shutil.copytree(PROTO, copy, ignore=shutil.ignore_patterns("node_modules", "python", "tests"))
    events = copy / "stacgis" / "v1" / "events.proto"
    events.write_text(events.read_text().replace("string run_id = 1;", "string run_id = 99;"))
    result = subprocess.run(
        [str(BUF), "breaking", str(copy), "--against", str(PROTO)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "run_id" in result.stdout + result.stderr
