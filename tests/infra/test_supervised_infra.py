"""Postgres, Redis and the model server run supervised: SIGKILL one and it comes back by itself,
with the restart and its reason in `status` and in its log (private ports and folders).

The time from the kill to the first real request answered again is measured and printed
(docs/reliability.md quotes it); it is a figure, not a threshold. The model server runs the real
embedded model when it is installed (its load is part of the recovery), else the scripted one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
import redis

from stacgis_common.testing import free_port

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import supervisor  # noqa: E402

RECOVERY_LIMIT_SECONDS = 180.0


class Infra:
    def __init__(self, local: Path, env: dict[str, str], pg_port: int, redis_port: int, model_port: int) -> None:
        self.local, self.env = local, env
        self.pg_port, self.redis_port, self.model_port = pg_port, redis_port, model_port

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "scripts/local_infra.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def state(self, name: str) -> dict[str, object]:
        return supervisor.read_state(self.local / "run", name)

    def log(self, name: str) -> str:
        return (self.local / "logs" / f"{name}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def infra(module_private_local: Path) -> Iterator[Infra]:
    local = module_private_local
    pg_port, redis_port, model_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "STACGIS_LOCAL_DIR": str(local),
        "STACGIS_PG_PORT": str(pg_port),
        "STACGIS_REDIS_PORT": str(redis_port),
        "STACGIS_MODEL_SERVER_PORT": str(model_port),
    }
    running = Infra(local, env, pg_port, redis_port, model_port)
    try:
        started = running.command("up")
        assert started.returncode == 0, started.stdout + started.stderr
        yield running
    finally:
        stopped = running.command("down")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def postgres_answers(infra: Infra) -> Callable[[], bool]:
    async def query() -> object:
        connection = await asyncpg.connect(f"postgresql://stacgis:stacgis@127.0.0.1:{infra.pg_port}/stacgis", timeout=2)
        try:
            return await connection.fetchval("SELECT 1")
        finally:
            await connection.close()

    def check() -> bool:
        try:
            return asyncio.run(query()) == 1
        except (OSError, asyncpg.PostgresError, TimeoutError):
            return False

    return check


def redis_answers(infra: Infra) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return bool(redis.Redis(port=infra.redis_port, socket_timeout=2).ping())
        except redis.RedisError:
            return False

    return check


def model_server_answers(infra: Infra) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{infra.model_port}/api/version", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return check


PROBES = {"postgres": postgres_answers, "redis": redis_answers, "model-server": model_server_answers}


@pytest.mark.parametrize("name", list(PROBES))
def test_a_killed_process_comes_back_by_itself_and_status_says_so(infra: Infra, name: str) -> None:
    answers = PROBES[name](infra)
    assert answers(), f"{name} does not answer before the kill"
    before = infra.state(name)
    pid = before["pid"]
    assert isinstance(pid, int)

    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    while not answers():
        assert time.monotonic() - killed_at < RECOVERY_LIMIT_SECONDS, infra.log(name)[-3000:]
        time.sleep(0.05)
    recovered = time.monotonic() - killed_at
    print(f"\nrecovery after SIGKILL: {name} answered again after {recovered:.2f} s")

    after = infra.state(name)
    assert after["pid"] not in (None, pid)
    assert after["restarts"] == int(str(before["restarts"])) + 1
    assert after["last_exit"] == "signal SIGKILL"
    assert f"{name} stopped (signal SIGKILL)" in infra.log(name)
    status = infra.command("status")
    line = next(line for line in status.stdout.splitlines() if line.startswith(name))
    assert "supervised" in line and "restarts" in line and "SIGKILL" in line, status.stdout
    report = infra.local / "recovery.json"
    figures = json.loads(report.read_text()) if report.exists() else {}
    figures[name] = round(recovered, 2)
    report.write_text(json.dumps(figures))


def test_a_crash_loop_is_reported_and_still_retried(tmp_path: Path) -> None:
    exits = tmp_path / "exits"
    crashing = [sys.executable, "-c", f"open({str(exits)!r}, 'a').write('x'); raise SystemExit(3)"]
    backoff = supervisor.Backoff(first=0.2, maximum=0.4, reset_after=60.0, crash_loop_after=3)
    driver = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import supervisor, pathlib; "
        f"sys.exit(supervisor.supervise(supervisor.Program('crasher', {crashing!r}, "
        f"pathlib.Path({str(tmp_path / 'run')!r}), pathlib.Path({str(tmp_path / 'crasher.log')!r}), "
        f"pathlib.Path({str(tmp_path)!r}), backoff=supervisor.{backoff!r})))"
    )
    process = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        state: dict[str, object] = {}
        while not state.get("crash_loop"):
            assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "crasher.log").read_text()
            time.sleep(0.05)
            state = supervisor.read_state(tmp_path / "run", "crasher")
        assert state["last_exit"] == "exit code 3"
        assert int(str(state["quick_exits"])) >= backoff.crash_loop_after
        assert "CRASH LOOP" in supervisor.describe_state(state)
        assert "CRASH LOOP (3 quick exits in a row)" in (tmp_path / "crasher.log").read_text()
        # Reported, and still retried.
        runs = len(exits.read_text())
        while len(exits.read_text()) == runs:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    assert not (tmp_path / "run" / "crasher.json").exists()
