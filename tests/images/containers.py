"""Starting the built images as containers the way the chart runs them: a fixed non-root user, a
read-only root filesystem with /tmp as a tmpfs, no capabilities. Containers use the host's network
(Postgres, Redis and the model server listen on loopback); each is named, and only containers this
suite started are removed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from image_engine import APT_COMMAND, PODMAN, ULIMITS  # noqa: E402 (scripts/image_engine.py: podman as images.py runs it)

BUILT = REPO / ".local" / "images" / "built.json"
PYTHON_USER = "10001:10001"
HARDENING = (
    "--read-only",
    "--tmpfs",
    "/tmp:rw,size=512m,mode=1777",  # noqa: S108 (the container's own /tmp, a tmpfs)
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
)
RUN_ID = uuid.uuid4().hex[:8]


def engine_problem() -> str | None:
    """None when podman can run containers here, else why not."""
    if shutil.which("podman") is None:
        return f"no container engine: podman is not installed (as root: `{APT_COMMAND}`, or `make images-setup`)"
    info = subprocess.run([*PODMAN, "info", "--format", "json"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"podman is installed but does not work: {info.stderr.strip()[-500:]}"
    return None


def built_images() -> dict[str, str]:
    """name -> image reference of what `make images` built (scripts/images.py writes built.json)."""
    if not BUILT.exists():
        return {}
    images: dict[str, dict[str, str]] = json.loads(BUILT.read_text())["images"]
    return {name: entry["reference"] for name, entry in images.items()}


def expected_images() -> list[str]:
    return sorted([p.parent.name for p in REPO.glob("services/*/Dockerfile")] + ["frontend"])


def image_exists(reference: str) -> bool:
    return subprocess.run([*PODMAN, "image", "exists", reference], check=False).returncode == 0


def inspect(reference: str) -> dict[str, object]:
    out = subprocess.run([*PODMAN, "image", "inspect", reference], capture_output=True, text=True, check=True)
    (entry,) = json.loads(out.stdout)
    assert isinstance(entry, dict)
    return entry


def _env_flags(env: Mapping[str, str]) -> list[str]:
    flags: list[str] = []
    for key, value in env.items():
        flags += ["-e", f"{key}={value}"]
    return flags


def _volume_flags(volumes: Sequence[Path]) -> list[str]:
    # Host folders appear at the same path, read-only.
    return [flag for path in volumes for flag in ("-v", f"{path}:{path}:ro")]


def run_once(
    image: str, command: Sequence[str], env: Mapping[str, str], user: str = PYTHON_USER, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """A one-shot container (a migration, as the chart's Jobs run them); removed when it ends."""
    name = f"stacgis-imagetest-{RUN_ID}-job-{uuid.uuid4().hex[:6]}"
    args = [*PODMAN, "run", "--rm", "--name", name, "--network", "host", *ULIMITS, *HARDENING, "--user", user]
    args += [*_env_flags(env), image, *command]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


@dataclass
class Container:
    name: str
    image: str
    url: str

    def logs(self) -> str:
        out = subprocess.run([*PODMAN, "logs", self.name], capture_output=True, text=True, check=False)
        return out.stdout + out.stderr

    def running(self) -> bool:
        out = subprocess.run(
            [*PODMAN, "inspect", "--format", "{{.State.Running}}", self.name], capture_output=True, text=True
        )
        return out.stdout.strip() == "true"

    def process_uids(self) -> set[int]:
        """The real and effective user ids of every process in the container (read inside it)."""
        out = subprocess.run(
            [*PODMAN, "exec", self.name, "sh", "-c", "cat /proc/[0-9]*/status"],
            capture_output=True,
            text=True,
            check=True,
        )
        uids: set[int] = set()
        for line in out.stdout.splitlines():
            if line.startswith("Uid:"):
                uids.update(int(value) for value in line.split()[1:3])
        return uids


@contextmanager
def container(
    image: str,
    label: str,
    env: Mapping[str, str],
    url: str,
    *,
    user: str = PYTHON_USER,
    volumes: Sequence[Path] = (),
    network: Sequence[str] = ("--network", "host"),
    ready_path: str = "/readyz",
    timeout: float = 180.0,
) -> Iterator[Container]:
    """Start `image` detached, wait until `url + ready_path` answers 200, remove it afterwards."""
    name = f"stacgis-imagetest-{RUN_ID}-{label}"
    args = [*PODMAN, "run", "--detach", "--name", name, *network, *ULIMITS, *HARDENING, "--user", user]
    args += [*_env_flags(env), *_volume_flags(volumes), image]
    started = subprocess.run(args, capture_output=True, text=True, check=False)
    if started.returncode != 0:
        raise AssertionError(f"{label}: podman run failed: {started.stderr.strip()}")
    handle = Container(name, image, url)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(url + ready_path, timeout=3).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if not handle.running():
                raise AssertionError(f"{label} ({image}) exited before it was ready:\n{handle.logs()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{label} not ready after {timeout:.0f} s:\n{handle.logs()[-4000:]}")
            time.sleep(0.5)
        yield handle
    finally:
        subprocess.run([*PODMAN, "rm", "--force", "--time", "10", name], capture_output=True, check=False)
