"""Ingress limits for slow clients and identity headers: the controller timeouts the chart asks for
(NOTES), the optional client_body_timeout snippet (run in a real nginx against a trickling client), and
trusted-header mode refused where the Ingress would pass a client's own identity header on."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import helm_python
import pytest

from stacgis_common.testing import free_port

from .conftest import RELEASE, Rendered, Renderer

SNIPPET = "nginx.ingress.kubernetes.io/configuration-snippet"
TRUSTED_NO_AUTH_URL: dict[str, Any] = {
    "gateway": {"auth": {"mode": "trusted-header", "trustedProxies": ["10.0.0.0/8"]}}
}


def annotations_of(rendered: Rendered) -> dict[str, dict[str, str]]:
    return {i["metadata"]["name"]: i["metadata"]["annotations"] for i in rendered.kinds("Ingress")}


def test_notes_name_the_controller_timeouts_to_set(renderer: Renderer) -> None:
    default = renderer.render({})
    assert '"client-header-timeout":"10","client-body-timeout":"10"' in default.notes
    assert "incomplete after 30 s" in default.notes
    tuned = renderer.render({"ingress": {"clientTimeouts": {"seconds": 7}}, "gateway": {"bodyDeadlineSeconds": 20}})
    assert '"client-header-timeout":"7","client-body-timeout":"7"' in tuned.notes
    assert "incomplete after 20 s" in tuned.notes
    # No snippet unless asked for: the default controller refuses Ingresses that carry one.
    assert not any(SNIPPET in a for a in annotations_of(default).values())
    assert "client-body-timeout" not in renderer.render({"ingress": {"enabled": False}}).notes


def test_the_body_timeout_snippet_covers_every_ingress_and_keeps_the_operators(renderer: Renderer) -> None:
    auth = {
        "mode": "trusted-header",
        "trustedProxies": ["10.0.0.0/8"],
        "authUrl": "http://oauth2-proxy.auth.svc/oauth2/auth",
    }
    values = {"ingress": {"clientTimeouts": {"seconds": 7, "bodySnippet": True}}, "gateway": {"auth": auth}}
    ingresses = annotations_of(renderer.render(values))
    assert set(ingresses) == {f"{RELEASE}-stacgis", f"{RELEASE}-stacgis-mcp"}
    for name, found in ingresses.items():
        assert found[SNIPPET] == "client_body_timeout 7s;", name
    own = 'more_set_headers "X-Team: maps";'
    values["ingress"]["annotations"] = {SNIPPET: own}
    for found in annotations_of(renderer.render(values)).values():
        assert found[SNIPPET] == f"client_body_timeout 7s;\n{own}"


def test_schema_refuses_a_zero_client_timeout(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="seconds"):
        chart.render(values={"ingress": {"clientTimeouts": {"seconds": 0}}}, name="demo", namespace="stacgis")


def test_trusted_header_mode_behind_the_ingress_needs_the_auth_proxy(
    chart: helm_python.Chart, renderer: Renderer
) -> None:
    """Without auth-url the Ingress passes a client's X-Forwarded-User to a gateway that believes it."""
    with pytest.raises(helm_python.HelmError, match=r"gateway\.auth\.authUrl.*ingress\.identityHeadersFromProxy"):
        chart.render(values=TRUSTED_NO_AUTH_URL, name="demo", namespace="stacgis")
    # The operator says a proxy in front of the controller sets them, or routes around the chart's Ingress.
    acknowledged = {**TRUSTED_NO_AUTH_URL, "ingress": {"identityHeadersFromProxy": True}}
    assert renderer.render(acknowledged).kinds("Ingress")
    assert not renderer.render({**TRUSTED_NO_AUTH_URL, "ingress": {"enabled": False}}).kinds("Ingress")


# -- the snippet in a real nginx -------------------------------------------------------------------


@pytest.fixture
def upstream() -> Iterator[int]:
    """A backend that reads request bodies for as long as they come and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drain(conn: socket.socket) -> None:
        with conn:
            while not stop.is_set() and conn.recv(65536):
                pass

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=drain, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    server.close()


def start_nginx(tmp_path: Path, upstream: int, snippet: str) -> tuple[subprocess.Popen[bytes], int]:
    """nginx proxying like ingress-nginx with proxy-request-buffering off, the snippet in the location."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(binary).exists(), "nginx is missing: make setup installs it (Debian nginx-light)"
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    temp = " ".join(
        f"{kind}_temp_path {tmp_path}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (tmp_path / "nginx.conf").write_text(f"""
        {user} daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;
        events {{}}
        http {{
          access_log off; {temp}
          server {{
            listen 127.0.0.1:{port};
            location / {{
              proxy_request_buffering off; proxy_http_version 1.1; proxy_read_timeout 3600s;
              proxy_pass http://127.0.0.1:{upstream};
              {snippet}
            }}
          }}
        }}""")
    command = [binary, "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "error.log")]
    check = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen(command)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)


def seconds_until_closed(port: int, wait: float) -> float | None:
    """Send a request whose body stops after two bytes; seconds until nginx ends it (None: still open)."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"POST /api/v1/chat HTTP/1.1\r\nHost: stacgis\r\nContent-Length: 100\r\n\r\nab")
        started = time.monotonic()
        client.settimeout(wait)
        try:
            while client.recv(4096):
                pass
        except TimeoutError:
            return None
        return time.monotonic() - started


@contextmanager
def nginx(folder: Path, upstream: int, snippet: str) -> Iterator[int]:
    folder.mkdir()
    proc, port = start_nginx(folder, upstream, snippet)
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_the_snippet_ends_a_stalled_body_in_nginx(tmp_path: Path, upstream: int, renderer: Renderer) -> None:
    values = {"ingress": {"clientTimeouts": {"seconds": 1, "bodySnippet": True}}}
    snippet = annotations_of(renderer.render(values))[f"{RELEASE}-stacgis"][SNIPPET]
    with nginx(tmp_path / "with", upstream, snippet) as port:
        closed = seconds_until_closed(port, wait=10)
        assert closed is not None and closed < 5, closed
    # Without it nginx keeps the stalled body open (its default is 60 s between two reads).
    with nginx(tmp_path / "without", upstream, "") as port:
        assert seconds_until_closed(port, wait=4) is None
