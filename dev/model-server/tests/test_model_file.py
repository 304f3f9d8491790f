"""Joining and checking the model file, with small fake parts (the real file is 1.1 GB)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from stacgis_model_server.model_file import ModelFileError, is_verified, join_parts, main, marker_path, verify


def make_parts(folder: Path, *contents: bytes) -> list[Path]:
    parts = []
    for index, content in enumerate(contents, start=1):
        part = folder / f"part{index:02}.bin"
        part.write_bytes(content)
        parts.append(part)
    return parts


def test_good_join_verifies_and_a_rerun_skips(tmp_path: Path) -> None:
    contents = (os.urandom(1000), os.urandom(3000), b"tail")
    joined = b"".join(contents)
    parts = make_parts(tmp_path, *contents)
    target = tmp_path / "models" / "model.gguf"
    seen: list[tuple[int, int]] = []

    written = join_parts(
        parts, target, len(joined), hashlib.sha256(joined).hexdigest(), lambda d, t: seen.append((d, t))
    )

    assert written is True
    assert target.read_bytes() == joined
    assert is_verified(target, hashlib.sha256(joined).hexdigest())
    assert seen[-1] == (len(joined), len(joined))
    # The marker remembers the check: a second run writes nothing and does not read the parts.
    for part in parts:
        part.unlink()
    assert join_parts(parts, target, len(joined), hashlib.sha256(joined).hexdigest()) is False


def test_wrong_size_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    contents = (b"a" * 100, b"b" * 50)
    parts = make_parts(tmp_path, *contents)
    target = tmp_path / "model.gguf"
    joined = b"".join(contents)

    with pytest.raises(ModelFileError) as raised:
        join_parts(parts, target, len(joined) + 1, hashlib.sha256(joined).hexdigest())

    message = str(raised.value)
    assert f"size is {len(joined):,} bytes, expected {len(joined) + 1:,} bytes" in message
    assert ".partial" in message  # names the file that was checked
    assert not target.exists()
    assert list(tmp_path.glob("*.partial")) == []


def test_wrong_hash_is_refused_naming_both_values(tmp_path: Path) -> None:
    contents = (b"x" * 64, b"y" * 64)
    parts = make_parts(tmp_path, *contents)
    target = tmp_path / "model.gguf"
    joined = b"".join(contents)
    wrong = hashlib.sha256(b"something else").hexdigest()

    with pytest.raises(ModelFileError) as raised:
        join_parts(parts, target, len(joined), wrong)

    assert hashlib.sha256(joined).hexdigest() in str(raised.value)
    assert wrong in str(raised.value)
    assert not target.exists()


def test_a_changed_file_loses_its_verification(tmp_path: Path) -> None:
    data = b"model bytes" * 10
    target = tmp_path / "model.gguf"
    target.write_bytes(data)
    verify(target, len(data), hashlib.sha256(data).hexdigest())
    assert is_verified(target, hashlib.sha256(data).hexdigest())

    target.write_bytes(data[:-1] + b"!")
    assert not is_verified(target, hashlib.sha256(data).hexdigest())
    with pytest.raises(ModelFileError, match="SHA-256 is"):
        verify(target, len(data), hashlib.sha256(data).hexdigest())


def test_cli_refuses_a_bad_file_with_the_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "qwen.gguf"
    target.write_bytes(b"not a model")
    assert main(["--target", str(target), "--verify-only"]) == 1
    error = capsys.readouterr().err
    assert str(target) in error and "size is 11 bytes, expected 1,117,320,768 bytes" in error
    assert not marker_path(target).exists()
