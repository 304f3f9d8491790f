"""scripts/test-images.sh (`make test-images`, and the images job of `make test`) never skips: without
the image engine, and unable to install it (not root with apt-get), it fails naming what is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from image_engine import APT_COMMAND, REQUIRED_BINARIES  # noqa: E402


def path_without_engine(folder: Path) -> str:
    """A PATH holding a link to every program of this one but the engine's."""
    for directory in os.environ["PATH"].split(os.pathsep):
        if not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            link = folder / program.name
            if program.name not in REQUIRED_BINARIES and not link.is_symlink():
                link.symlink_to(program)
    return str(folder)


def test_a_missing_engine_that_cannot_be_installed_fails_the_job_naming_it(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": path_without_engine(tmp_path)}
    command = ["bash", "scripts/test-images.sh"]
    if os.geteuid() == 0:
        # As root it would install the engine with apt-get; in a user namespace of its own it is uid 65534.
        command = ["unshare", "--user", *command]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"{', '.join(REQUIRED_BINARIES)} not found" in output, output
    assert APT_COMMAND in output, output
    assert "this is not root with apt-get, so it cannot be installed here" in output, output
