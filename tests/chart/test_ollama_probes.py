"""The chart's Ollama probes, run the way the kubelet runs them against a real Ollama-protocol server.

No Ollama binary is obtainable here, so the local model server (which speaks Ollama's API) stands in.
Each rendered probe (path, port, timeout) is tried once per state: a healthy server passes every
probe; a wedged one (SIGSTOP: the kernel still accepts connections, nothing answers) fails the
startup and liveness probes by their timeout; a dead one (SIGKILL) fails them at once. How long the
kubelet takes to restart a wedged or dead server follows from the probe settings and is printed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stacgis_common.testing import RunningService, free_port, run_service

from .conftest import Rendered, name_of

KUBELET_DEFAULT_TIMEOUT_SECONDS = 1
KUBELET_DEFAULT_PERIOD_SECONDS = 10
KUBELET_DEFAULT_FAILURE_THRESHOLD = 3


def ollama_container(rendered: Rendered) -> dict[str, Any]:
    spec = rendered.get("Deployment", name_of("ollama"))["spec"]["template"]["spec"]
    container: dict[str, Any] = next(c for c in spec["containers"] if c["name"] == "ollama")
    return container


def port_number(container: dict[str, Any], port: str | int) -> int:
    if isinstance(port, int):
        return port
    return int(next(p["containerPort"] for p in container["ports"] if p["name"] == port))


def probe_once(probe: dict[str, Any], port: int) -> bool:
    """One httpGet probe as the kubelet runs it: success is a 2xx/3xx within timeoutSeconds."""
    timeout = probe.get("timeoutSeconds", KUBELET_DEFAULT_TIMEOUT_SECONDS)
    try:
        status = httpx.get(f"http://127.0.0.1:{port}{probe['httpGet']['path']}", timeout=timeout).status_code
    except httpx.HTTPError:
        return False
    return 200 <= status < 400


def restart_after_seconds(probe: dict[str, Any]) -> float:
    """Longest time from a wedge to the kubelet's restart: failureThreshold failed probes, the last timing out."""
    period = probe.get("periodSeconds", KUBELET_DEFAULT_PERIOD_SECONDS)
    failures = probe.get("failureThreshold", KUBELET_DEFAULT_FAILURE_THRESHOLD)
    timeout = probe.get("timeoutSeconds", KUBELET_DEFAULT_TIMEOUT_SECONDS)
    return float(period * failures + timeout)


@pytest.fixture()
def stand_in(default: Rendered) -> Iterator[tuple[RunningService, int]]:
    container = ollama_container(default)
    # Every probe of the container targets the one HTTP port, served here by the stand-in.
    ports = {port_number(container, container[p]["httpGet"]["port"]) for p in ("startupProbe", "livenessProbe")}
    assert len(ports) == 1
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted"}
    with run_service("stacgis_model_server", env, port, ready_path="/api/version") as service:
        try:
            yield service, port
        finally:
            if service.process.poll() is None:
                os.kill(service.process.pid, signal.SIGCONT)


def test_startup_and_liveness_probes_catch_a_wedged_and_a_dead_server(
    default: Rendered, stand_in: tuple[RunningService, int]
) -> None:
    container = ollama_container(default)
    service, port = stand_in
    probes = {name: container[name] for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    for name, probe in probes.items():
        assert probe_once(probe, port), f"{name} fails against a healthy server"

    os.kill(service.process.pid, signal.SIGSTOP)
    try:
        for name in ("startupProbe", "livenessProbe"):
            started = time.monotonic()
            assert not probe_once(probes[name], port), f"{name} passes against a wedged server"
            waited = time.monotonic() - started
            print(f"\n{name}: a wedged server fails one probe after {waited:.1f} s")
    finally:
        os.kill(service.process.pid, signal.SIGCONT)
    assert probe_once(probes["livenessProbe"], port), "the liveness probe does not pass again once the wedge clears"

    service.kill()
    for name in ("startupProbe", "livenessProbe"):
        assert not probe_once(probes[name], port), f"{name} passes against a dead server"

    liveness = probes["livenessProbe"]
    # Probes must not overlap: a probe still waiting when the next is due would hide a wedge.
    assert liveness["timeoutSeconds"] < liveness["periodSeconds"]
    print(
        f"liveness restarts a wedged or dead Ollama after at most {restart_after_seconds(liveness):.0f} s; "
        f"startup gives a starting one {restart_after_seconds(probes['startupProbe']):.0f} s"
    )
