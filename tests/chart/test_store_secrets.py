"""The bundled Postgres and Redis read their passwords from the mounted Secret, not from environment
variables; the Redis container's own command and probes are run against a real redis-server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stacgis_common.testing import free_port

from .conftest import Rendered, Renderer, name_of


def store(rendered: Rendered, component: str) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = rendered.get("StatefulSet", name_of(component))["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return spec, container


def secret_file(spec: dict[str, Any], container: dict[str, Any], path: str) -> tuple[str, str]:
    """(Secret name, key) of the file at `path` in the container."""
    folder, _, filename = path.rpartition("/")
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
    assert mount["readOnly"] is True
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    (item,) = [i for i in volume["secret"]["items"] if i["path"] == filename]
    # Read by the owner and the pod's fsGroup only.
    assert volume["secret"]["defaultMode"] == 0o440
    return volume["secret"]["secretName"], item["key"]


@pytest.mark.parametrize(
    ("values", "secret", "key"),
    [
        ({}, None, "password"),
        (
            {
                "postgresql": {"auth": {"existingSecret": "pg", "passwordKey": "pw"}},
                "redis": {"auth": {"existingSecret": "rd", "passwordKey": "pw"}},
            },
            "given",
            "pw",
        ),
    ],
)
def test_bundled_stores_read_their_password_from_the_mounted_secret(
    renderer: Renderer, values: dict[str, Any], secret: str | None, key: str
) -> None:
    rendered = renderer.render(values)
    for component, given in (("postgresql", "pg"), ("redis", "rd")):
        spec, container = store(rendered, component)
        assert not any("valueFrom" in e for e in container.get("env", [])), f"{component}: a secret in the environment"
        expected_secret = given if secret == "given" else name_of(component)
        if component == "postgresql":
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert "POSTGRES_PASSWORD" not in env
            assert secret_file(spec, container, env["POSTGRES_PASSWORD_FILE"]) == (expected_secret, key)
        else:
            assert secret_file(spec, container, "/run/secrets/redis/password") == (expected_secret, key)


# The container's folders (its secret mount, /tmp emptyDir and data volume).
CONTAINER_FOLDERS = ("/run/secrets/redis", "/tmp", "/data")  # noqa: S108 - paths inside the container


def localise(text: str, root: Path, port: int) -> str:
    """The container's paths and port mapped into a temporary folder on this host."""
    folders = {inside: str(root / inside.strip("/").replace("/", "-")) for inside in CONTAINER_FOLDERS}
    text = re.sub("|".join(map(re.escape, folders)), lambda m: folders[m.group(0)], text)
    return text.replace("--port 6379", f"--port {port}").replace("-h 127.0.0.1", f"-h 127.0.0.1 -p {port}")


def run_probe(command: list[str], root: Path, port: int) -> bool:
    probe = [localise(part, root, port) for part in command]
    return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0


def test_redis_runs_its_rendered_command_with_the_mounted_password(default: Rendered, tmp_path: Path) -> None:
    assert shutil.which("redis-server"), "redis-server is missing: make setup installs it"
    _, container = store(default, "redis")
    password = "p" * 20 + "-from-the-secret-file"
    for folder in CONTAINER_FOLDERS:
        (tmp_path / folder.strip("/").replace("/", "-")).mkdir()
    (tmp_path / "run-secrets-redis" / "password").write_text(password)
    port = free_port()
    command = [localise(part, tmp_path, port) for part in container["command"]]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        startup = container["startupProbe"]["exec"]["command"]
        deadline = time.monotonic() + 20
        while not run_probe(startup, tmp_path, port):
            assert server.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "the startup probe never passed"
            time.sleep(0.2)
        for probe in ("livenessProbe", "readinessProbe"):
            assert run_probe(container[probe]["exec"]["command"], tmp_path, port), probe
        # The password is required: without it (or with another) the server refuses.
        cli = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
        anonymous = subprocess.run([*cli, "ping"], capture_output=True, text=True, timeout=10, check=False)
        assert "NOAUTH" in anonymous.stdout + anonymous.stderr

        def ping(auth: str) -> str:
            env = dict(os.environ, REDISCLI_AUTH=auth)
            return subprocess.run([*cli, "ping"], capture_output=True, text=True, env=env, check=False).stdout.strip()

        assert ping("not-the-password") != "PONG"
        assert ping(password) == "PONG"
        # Neither the server's environment nor its command line holds the password.
        proc = Path(f"/proc/{server.pid}")
        assert password.encode() not in (proc / "environ").read_bytes()
        assert password.encode() not in (proc / "cmdline").read_bytes()
        config = tmp_path / "tmp" / "redis.conf"
        assert config.stat().st_mode & 0o077 == 0, "the config file holding the password is private"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_redis_refuses_to_start_without_a_password(default: Rendered, tmp_path: Path) -> None:
    """A missing or empty password file stops the container instead of running Redis open."""
    _, container = store(default, "redis")
    for folder in CONTAINER_FOLDERS:
        (tmp_path / folder.strip("/").replace("/", "-")).mkdir()
    command = [localise(part, tmp_path, free_port()) for part in container["command"]]
    missing = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    assert missing.returncode != 0 and "password" in missing.stderr
    (tmp_path / "run-secrets-redis" / "password").write_text("")
    empty = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    assert empty.returncode != 0 and "empty password" in empty.stderr
