"""The model-pull Job's script pulls exactly the models missing from the volume.

The script is taken from the rendered Job and run by /bin/sh against a
stand-in `ollama` CLI that keeps its model list in a file (no Ollama binary
is installable here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from .conftest import Rendered, env_of, name_of

FAKE_OLLAMA = """#!/bin/sh
# Stand-in for the ollama CLI: `list` prints the table, `pull` records the model.
state="$FAKE_OLLAMA_STATE"
case "$1" in
  list)
    printf 'NAME\\tID\\tSIZE\\tMODIFIED\\n'
    while read -r name; do printf '%s\\tabc123\\t1 GB\\t2 days ago\\n' "$name"; done < "$state"
    ;;
  pull)
    echo "$2" >> "$FAKE_OLLAMA_PULLS"
    case "$2" in *:*) echo "$2" ;; *) echo "$2:latest" ;; esac >> "$state"
    ;;
  *) exit 2 ;;
esac
"""


def _run_job(job: dict[str, Any], tmp_path: Path, present: list[str]) -> list[str]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-ec"]
    script = container["command"][2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "ollama"
    fake.write_text(FAKE_OLLAMA)
    fake.chmod(0o755)
    state = tmp_path / "models"
    if not state.exists():
        state.write_text("".join(f"{m}\n" for m in present))
    pulls = tmp_path / "pulls"
    pulls.write_text("")
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_OLLAMA_STATE": str(state),
        "FAKE_OLLAMA_PULLS": str(pulls),
        **{name: e["value"] for name, e in env_of(container).items() if "value" in e},
    }
    result = subprocess.run(["/bin/sh", "-ec", script], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return pulls.read_text().split()


def test_pulls_only_missing_models(default: Rendered, tmp_path: Path) -> None:
    job = default.get("Job", name_of("model-pull"))
    # The embedding model is already on the volume (as "name:latest"); the chat model is not.
    assert _run_job(job, tmp_path, ["nomic-embed-text:latest", "llama3:8b"]) == ["qwen3:8b"]
    # An upgrade with the same models pulls nothing.
    assert _run_job(job, tmp_path, []) == []


def test_first_install_pulls_everything(default: Rendered, tmp_path: Path) -> None:
    job = default.get("Job", name_of("model-pull"))
    assert _run_job(job, tmp_path, []) == ["qwen3:8b", "nomic-embed-text"]


def test_a_different_tag_is_not_the_same_model(default: Rendered, tmp_path: Path) -> None:
    job = default.get("Job", name_of("model-pull"))
    assert _run_job(job, tmp_path, ["qwen3:4b", "nomic-embed-text:latest"]) == ["qwen3:8b"]
