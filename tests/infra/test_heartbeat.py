"""scripts/heartbeat.py: a long step of `make setup` / `make up` says it is alive, with the time spent."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import heartbeat  # noqa: E402


class Watched(io.StringIO):
    """An output stream that tells when a heartbeat line named the command's latest line."""

    def __init__(self) -> None:
        super().__init__()
        self.beat = threading.Event()

    def write(self, text: str) -> int:
        if "still working" in text and "(last: Building" in text:
            self.beat.set()
        return super().write(text)


def slow_command(signal: Path, code: int = 0) -> list[str]:
    # Prints, then stays silent until the test saw a heartbeat (or 60 s pass), then prints again:
    # silence of whatever length the heartbeat needs, without a timing threshold in the test.
    script = (
        "import pathlib, sys, time\n"
        "print('Collecting rasterio==1.4.3')\n"
        "print('Building wheel for llama-cpp-python (pyproject.toml): started')\n"
        f"flag = pathlib.Path({str(signal)!r})\n"
        "end = time.monotonic() + 60\n"
        "while not flag.exists() and time.monotonic() < end:\n"
        "    time.sleep(0.02)\n"
        "print('Successfully installed llama-cpp-python-0.3.9')\n"
        f"sys.exit({code})\n"
    )
    return [sys.executable, "-c", script]


def run_until_beat(tmp_path: Path, code: int = 0, show: str | None = None) -> tuple[int, str]:
    signal = tmp_path / "beat-seen"
    out = Watched()

    def release() -> None:
        out.beat.wait(60)
        signal.touch()

    helper = threading.Thread(target=release, daemon=True)
    helper.start()
    result = heartbeat.run(slow_command(signal, code), "installing", every=0.05, show=show, prefix="[setup]", out=out)
    helper.join()
    return result, out.getvalue()


def test_a_silent_command_gets_heartbeat_lines_with_time_and_its_latest_line(tmp_path: Path) -> None:
    code, text = run_until_beat(tmp_path)
    lines = text.splitlines()
    assert code == 0
    # Its own output passes through as it comes ...
    own = [line for line in lines if "still working" not in line]
    assert own[:3] == [
        "Collecting rasterio==1.4.3",
        "Building wheel for llama-cpp-python (pyproject.toml): started",
        "Successfully installed llama-cpp-python-0.3.9",
    ]
    # ... and while it is silent, lines say it is alive, how long it has run and where it is.
    beat = re.compile(
        r"\[setup\] installing: still working, \d+ s "
        r"\(last: Building wheel for llama-cpp-python \(pyproject.toml\): started\)"
    )
    beats = [i for i, line in enumerate(lines) if beat.fullmatch(line)]
    assert beats and beats[0] < lines.index("Successfully installed llama-cpp-python-0.3.9")
    assert re.fullmatch(r"\[setup\] installing: done in \d+ s", lines[-1])


def test_filtered_output_is_shown_when_the_command_fails(tmp_path: Path) -> None:
    code, text = run_until_beat(tmp_path, code=3, show=r"^(Building|Successfully|ERROR)")
    lines = text.splitlines()
    own = [line for line in lines if "still working" not in line]
    assert code == 3
    # Only the lines asked for while it runs.
    assert own[:2] == [
        "Building wheel for llama-cpp-python (pyproject.toml): started",
        "Successfully installed llama-cpp-python-0.3.9",
    ]
    assert any("still working" in line for line in lines)
    # The held-back lines come out after a failure, so its cause is not lost.
    assert "    Collecting rasterio==1.4.3" in lines
    assert re.fullmatch(r"\[setup\] installing: failed after \d+ s \(exit status 3\)", lines[-1])


def test_the_command_line_form_used_by_setup_sh() -> None:
    script = str(ROOT / "scripts" / "heartbeat.py")
    npm = [sys.executable, "-c", "print('noise'); print('added 412 packages')"]
    result = subprocess.run(
        [sys.executable, script, "--prefix", "[setup]", "--label", "npm ci", "--show", "^added", "--", *npm],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "added 412 packages"
    assert "noise" not in result.stdout
    assert re.fullmatch(r"\[setup\] npm ci: done in \d+ s", result.stdout.splitlines()[-1])
    failed = subprocess.run(
        [sys.executable, script, "--", "sh", "-c", "exit 7"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 7


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (45, "45 s"), (125, "2 min 05 s"), (3780, "1 h 03 min")])
def test_elapsed_reads_as_a_person_would_say_it(seconds: float, text: str) -> None:
    assert heartbeat.elapsed(seconds) == text


def test_every_long_step_of_setup_sh_runs_under_the_heartbeat() -> None:
    # pip, npm and apt installs are what ran silent for minutes on a fresh machine.
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    commands = re.sub(r"\\\n\s*", " ", setup).splitlines()
    slow = [
        line
        for line in commands
        if re.search(r"pip install|npm ci|apt-get (update|install)|stacgis_model_server\.model_file", line)
        and not line.lstrip().startswith("#")
    ]
    assert slow
    unwrapped = [line.strip() for line in slow if not re.search(r'\blong "', line)]
    assert not unwrapped, f"long steps without a heartbeat: {unwrapped}"


def test_make_up_steps_report_their_time_and_stop_on_failure(capsys: pytest.CaptureFixture[str]) -> None:
    import stack

    stack.run_step("vector-tools: loading datasets (first run: 1-2 min)", [sys.executable, "-c", "print(34000)"], {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["[stack] vector-tools: loading datasets (first run: 1-2 min)", "34000"]
    assert re.fullmatch(r"\[stack\] vector-tools: loading datasets: done in \d+ s", lines[-1])
    with pytest.raises(SystemExit, match="exited with 2"):
        stack.run_step("frontend: building (vite)", ["sh", "-c", "exit 2"], {})
