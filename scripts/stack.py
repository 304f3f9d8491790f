"""`make up` / `make down` / `make status`: the whole product on one machine.

Every service runs as its own process (honcho, from the Procfile) with the environment the
Helm chart sets (deploy/local/stack.env), behind a local nginx acting as the ingress.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import local_infra as infra

ROOT = infra.ROOT
LOCAL = infra.LOCAL
VENV_BIN = ROOT / ".venv" / "bin"
SERVICES = {
    "raster-tools": 8011,
    "vector-tools": 8012,
    "knowledge-tools": 8013,
    "memory-tools": 8014,
    "agent-orchestrator": 8001,
    "chat-gateway": 8000,
}
INGRESS = "http://localhost:8080"


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def stack_env() -> dict[str, str]:
    """The services' environment: stack.env, then the caller's overrides, then the LLM choice."""
    env = {**read_env_file(ROOT / "deploy" / "local" / "stack.env"), **os.environ}
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    ollama = os.environ.get("OLLAMA_BASE_URL")
    if "ORCHESTRATOR_LLM_BASE_URL" in os.environ:
        pass
    elif ollama and http_ok(ollama.rstrip("/") + "/api/tags"):
        infra.say(f"using Ollama at {ollama}")
        env["ORCHESTRATOR_LLM_BASE_URL"] = ollama
        env.setdefault("ORCHESTRATOR_LLM_MODEL", "qwen3")
    else:
        if ollama:
            infra.say(f"OLLAMA_BASE_URL={ollama} does not answer: using the local model server")
        env["ORCHESTRATOR_LLM_BASE_URL"] = f"http://127.0.0.1:{infra.MODEL_PORT}"
        env.setdefault("ORCHESTRATOR_LLM_MODEL", "smollm2:135m")
    env.setdefault("GATEWAY_MODEL_LABEL", env["ORCHESTRATOR_LLM_MODEL"])
    return env


def run_step(title: str, command: list[str], env: dict[str, str]) -> None:
    infra.say(title)
    subprocess.run(command, check=True, cwd=ROOT, env=env)


def build_data(env: dict[str, str]) -> None:
    python = str(VENV_BIN / "python")
    run_step(
        "building the raster demo data (skipped when built)",
        [python, "-m", "stacgis_raster.demo_data", "--cache", str(LOCAL / "cache"), "--out", str(LOCAL / "data")],
        env,
    )
    run_step(
        "loading the vector datasets (skipped when loaded)",
        [python, "-m", "stacgis_vector.load", "--cache", str(LOCAL / "cache")],
        env,
    )
    run_step(
        "ingesting the knowledge base (skipped when unchanged)",
        [python, "-m", "stacgis_knowledge.ingest", str(ROOT / "knowledge")],
        env,
    )
    run_step("applying the memory and gateway migrations", [python, "-m", "stacgis_memory.migrate"], env)
    run_step("", [python, "-m", "stacgis_gateway.migrate"], env)


def build_frontend(env: dict[str, str]) -> Path:
    frontend = ROOT / "frontend"
    dist = frontend / "dist"
    sources = [p for p in (frontend / "src").rglob("*") if p.is_file()] + [frontend / "index.html"]
    newest = max((p.stat().st_mtime for p in sources if p.exists()), default=0.0)
    if not (dist / "index.html").exists() or (dist / "index.html").stat().st_mtime < newest:
        if not (frontend / "node_modules").exists():
            run_step(
                "installing the frontend's npm packages",
                ["npm", "ci", "--no-audit", "--no-fund"],
                {**env, "PWD": str(frontend)},
            )
        infra.say("building the frontend")
        subprocess.run(["npm", "run", "build"], check=True, cwd=frontend, env=env)
    return dist


def write_nginx_config(dist: Path) -> None:
    folder = LOCAL / "nginx"
    for sub in ("tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    template = (ROOT / "deploy" / "local" / "nginx.conf.template").read_text()
    config = (
        template.replace("{{LOCAL}}", str(LOCAL))
        .replace("{{DIST}}", str(dist))
        .replace("{{MIME_TYPES}}", "/etc/nginx/mime.types")
    )
    (folder / "nginx.conf").write_text(config)


def wait_ready(timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    pending = dict(SERVICES)
    while pending and time.monotonic() < deadline:
        for name, port in list(pending.items()):
            if http_ok(f"http://127.0.0.1:{port}/readyz"):
                infra.say(f"{name} ready on 127.0.0.1:{port}")
                del pending[name]
        honcho_pid = LOCAL / "run" / "honcho.pid"
        if not honcho_alive(honcho_pid):
            raise SystemExit(f"[stack] the services stopped; see {LOCAL / 'logs'}")
        time.sleep(0.5)
    if pending:
        raise SystemExit(f"[stack] not ready after {timeout:.0f}s: {', '.join(pending)}; see {LOCAL / 'logs'}")
    while not http_ok(INGRESS + "/api/v1/chat/capacity"):
        if time.monotonic() > deadline:
            raise SystemExit("[stack] the ingress does not answer on :8080")
        time.sleep(0.3)


def honcho_alive(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text()), 0)
        return True
    except (OSError, ValueError):
        return False


def up() -> None:
    pidfile = LOCAL / "run" / "honcho.pid"
    if honcho_alive(pidfile):
        infra.say("the stack is already running")
        status()
        return
    infra.postgres_up()
    infra.redis_up()
    infra.model_server_up()
    env = stack_env()
    build_data(env)
    dist = build_frontend(env)
    write_nginx_config(dist)
    logs = LOCAL / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "services.log").open("ab") as log:
        process = subprocess.Popen(
            [str(VENV_BIN / "honcho"), "-f", str(ROOT / "Procfile"), "-d", str(ROOT), "start"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    pidfile.write_text(str(process.pid))
    infra.say(f"services starting (pid {process.pid}); logs in {logs}")
    wait_ready()
    print(f"\nstacgis is ready: {INGRESS}  (model: {env['ORCHESTRATOR_LLM_MODEL']})\n", flush=True)


def down() -> None:
    pidfile = LOCAL / "run" / "honcho.pid"
    if honcho_alive(pidfile):
        pid = int(pidfile.read_text())
        os.killpg(pid, signal.SIGTERM)
        for _ in range(100):
            if not honcho_alive(pidfile):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
        infra.say("services stopped")
    pidfile.unlink(missing_ok=True)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "local_infra.py"), "down"], check=False)


def status() -> int:
    down_count = infra.status()
    for name, port in SERVICES.items():
        ready = http_ok(f"http://127.0.0.1:{port}/readyz")
        down_count += not ready
        print(f"{name:18} 127.0.0.1:{port:<6} {'ready' if ready else 'down'}")
    ingress = http_ok(INGRESS + "/")
    down_count += not ingress
    print(f"{'ingress':18} 127.0.0.1:8080   {'up' if ingress else 'down'}   {INGRESS}")
    return down_count


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the whole product locally.")
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args()
    if args.command == "up":
        up()
    elif args.command == "down":
        down()
    else:
        sys.exit(1 if status() else 0)


if __name__ == "__main__":
    main()
