"""Talking to the running local product (`make up`): chats over SSE, the scripted model, a real Prometheus."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = os.environ.get("STACGIS_GATEWAY_URL", "http://127.0.0.1:8000")
MODEL_SERVER = os.environ.get("STACGIS_MODEL_SERVER_URL", "http://127.0.0.1:11434")
PROMETHEUS = os.environ.get("PROMETHEUS_BINARY", "/usr/bin/prometheus")
# Service -> port of `make up` (scripts/stack.py); the Prometheus job names follow the chart's
# Service names (<release>-stacgis-<service>) so the shipped rules' job matchers apply unchanged.
SERVICES = {
    "chat-gateway": 8000,
    "agent-orchestrator": 8001,
    "raster-tools": 8011,
    "vector-tools": 8012,
    "knowledge-tools": 8013,
    "memory-tools": 8014,
}


def job_of(service: str) -> str:
    return f"stacgis-{service}"


def not_ready() -> list[str]:
    down = []
    for name, port in SERVICES.items():
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=3).status_code != 200:
                down.append(name)
        except httpx.HTTPError:
            down.append(name)
    return down


def exported_samples(service: str) -> set[str]:
    """Every sample name (x_bucket, x_total, ...) a service's /metrics exposes right now."""
    text = httpx.get(f"http://127.0.0.1:{SERVICES[service]}/metrics", timeout=10).text
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(line.split("{", 1)[0].split(" ", 1)[0])
    return names


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    id: str | None


@dataclass
class Chat:
    status: int
    events: list[Event] = field(default_factory=list)
    body: Any = None

    def names(self) -> list[str]:
        return [e.name for e in self.events]

    @property
    def run_id(self) -> str:
        for event in self.events:
            run = event.data.get("runId") or event.data.get("run_id")
            if run:
                return str(run)
        raise AssertionError(f"no run id in the events {self.names()}")

    @property
    def session_id(self) -> str:
        for event in self.events:
            started = event.data.get("runStarted") or event.data.get("run_started") or {}
            session = started.get("sessionId") or started.get("session_id")
            if session:
                return str(session)
        raise AssertionError(f"no session event in {self.names()}")


def read_sse(response: httpx.Response) -> Iterator[Event]:
    name, data, event_id = "message", [], None
    for line in response.iter_lines():
        if not line:
            if data:
                yield Event(name, json.loads("\n".join(data)), event_id)
            name, data, event_id = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            elif key == "id":
                event_id = value


def chat(
    client: httpx.Client,
    message: str,
    session_id: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 90.0,
) -> Chat:
    """POST /api/v1/chat/stream and read the run to its `done` or `error` event."""
    body: dict[str, Any] = {"message": message}
    if session_id:
        body["session_id"] = session_id
    with client.stream(
        "POST", f"{GATEWAY}/api/v1/chat/stream", json=body, headers=headers, timeout=timeout
    ) as response:
        if response.status_code != 200:
            response.read()
            return Chat(response.status_code, body=response.json())
        result = Chat(200)
        for event in read_sse(response):
            result.events.append(event)
            if event.name in ("done", "error"):
                break
        return result


class ScriptedModel:
    """Rules of the scripted model server (dev/model-server): added for the traffic run, then restored."""

    def __init__(self, base: str = MODEL_SERVER) -> None:
        self.base = base.rstrip("/")

    def rules(self) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.base}/_scripted/rules", timeout=10)
        response.raise_for_status()
        return list(response.json()["rules"])

    def prepend(self, rules: list[dict[str, Any]]) -> None:
        response = httpx.post(f"{self.base}/_scripted/rules", json={"rules": rules}, timeout=10)
        assert response.status_code == 200, response.text

    def replace(self, rules: list[dict[str, Any]]) -> None:
        response = httpx.put(f"{self.base}/_scripted/rules", json={"rules": rules}, timeout=10)
        assert response.status_code == 200, response.text

    @contextmanager
    def extra_rules(self, rules: list[dict[str, Any]]) -> Iterator[None]:
        saved = self.rules()
        self.prepend(rules)
        try:
            yield
        finally:
            self.replace(saved)


class Prometheus:
    """A real Prometheus scraping every service of the running stack every second."""

    def __init__(self, folder: Path, port: int, rule_files: list[Path]) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.folder = folder
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {
                    "job_name": job_of(service),
                    "static_configs": [{"targets": [f"127.0.0.1:{port_}"]}],
                }
                for service, port_ in SERVICES.items()
            ],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = (folder / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def logs(self) -> str:
        return (self.folder / "prometheus.log").read_text(errors="replace")[-4000:]

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.process.returncode}:\n{self.logs()}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        else:
            raise AssertionError(f"prometheus not ready after {timeout:.0f}s:\n{self.logs()}")
        # The first scrape lands a few seconds after start: wait until every job has answered.
        while time.monotonic() < deadline:
            up = self.instant("up == 1")
            if {r["metric"]["job"] for r in up} >= {job_of(s) for s in SERVICES}:
                return
            time.sleep(0.5)
        raise AssertionError(f"not every service was scraped within {timeout:.0f}s: {self.instant('up')}")

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        response = httpx.get(f"{self.url}{path}", params=params, timeout=30)
        payload = response.json()
        assert payload.get("status") == "success", f"{path} {params}: {payload}"
        return payload["data"]

    def instant(self, expr: str) -> list[dict[str, Any]]:
        return list(self._get("/api/v1/query", {"query": expr})["result"])

    def range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        return list(
            self._get("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step})["result"]
        )

    def rules(self) -> list[dict[str, Any]]:
        return [rule for group in self._get("/api/v1/rules", {})["groups"] for rule in group["rules"]]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
