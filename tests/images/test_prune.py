"""`make images` removes what rebuilds replaced (scripts/images.py prune_replaced): this project's
images older than a day that no current tag names, and nothing it was told to keep or built lately.
Tiny images made here under a prefix of this run's own, some dated 1970 with `podman build
--timestamp 0`; everything under the prefix is removed afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .containers import PODMAN, REPO, RUN_ID, engine_problem, image_exists, inspect

# scripts/images.py, loaded by path: `images` is also this test package's name.
_spec = importlib.util.spec_from_file_location("image_builds", REPO / "scripts" / "images.py")
assert _spec is not None and _spec.loader is not None
images = importlib.util.module_from_spec(_spec)
sys.modules["image_builds"] = images
_spec.loader.exec_module(images)

PREFIX = f"localhost/stacgis-prune-test-{RUN_ID}/"


def build(folder: Path, reference: str, content: str, *, old: bool) -> None:
    """An image holding one file; `old` dates it 1970."""
    context = folder / reference.rsplit("/", 1)[-1].replace(":", "-")
    context.mkdir()
    (context / "content.txt").write_text(content)
    (context / "Containerfile").write_text("FROM scratch\nCOPY content.txt /content.txt\n")
    dated = ["--timestamp", "0"] if old else []
    subprocess.run([*PODMAN, "build", "--quiet", *dated, "--tag", reference, str(context)], check=True)


@pytest.fixture
def made(tmp_path: Path) -> Iterator[None]:
    problem = engine_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    yield
    listed = subprocess.run(
        [*PODMAN, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=True
    )
    ours = [ref for ref in listed.stdout.split() if ref.startswith(PREFIX)]
    if ours:
        subprocess.run([*PODMAN, "rmi", "--force", *ours], capture_output=True, check=False)


def test_prune_removes_old_images_no_kept_tag_names_and_nothing_else(made: None, tmp_path: Path) -> None:
    replaced, kept, second_tag, fresh = (f"{PREFIX}{name}" for name in ("a:old", "b:current", "b:old", "c:new"))
    build(tmp_path, replaced, "replaced by a rebuild", old=True)
    build(tmp_path, kept, "the current build", old=True)
    subprocess.run([*PODMAN, "tag", kept, second_tag], check=True)
    build(tmp_path, fresh, "built an hour ago, maybe by a build running beside this one", old=False)
    kept_id = inspect(kept)["Id"]

    images.prune_replaced({kept}, prefixes=(PREFIX,))

    assert not image_exists(replaced)
    assert image_exists(kept) and inspect(kept)["Id"] == kept_id
    # The kept image only lost its other, stale tag.
    assert not image_exists(second_tag)
    assert image_exists(fresh)
