"""The environment of `make up`'s services: deploy/local/stack.env, the caller's variables and the LLM
choice (Ollama when it answers, else the local model server with its embedded model).

Used by scripts/stack.py; the helpers shared by its other modules (paths, `say`, HTTP probes) live here.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import local_infra as infra

ROOT = infra.ROOT
LOCAL = infra.LOCAL
RUN = infra.RUN
LOGS = infra.LOGS
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = VENV_BIN / "python"
STACK_ENV = ROOT / "deploy" / "local" / "stack.env"
# The chart's default chat model, used with Ollama when ORCHESTRATOR_LLM_MODEL is not set.
CHART_LLM_MODEL = "qwen3:8b"
# The embedded model of the local model server (Qwen2.5-Coder-1.5B-Instruct, see docs/model-server.md).
LOCAL_LLM_MODEL = "qwen2.5-coder:1.5b"
LOCAL_MODEL_SETTINGS = {
    # The server's context window (MODEL_SERVER_LLAMA_CONTEXT) and its cap on generated tokens.
    "ORCHESTRATOR_LLM_NUM_CTX": "16384",
    "ORCHESTRATOR_LLM_MAX_OUTPUT_TOKENS": "1024",
    # Greedy decoding: a 1.5B model chooses tools best without sampling noise.
    "ORCHESTRATOR_LLM_TEMPERATURE": "0",
    # A cold prompt (system prompt and every tool, no saved state yet) is read for 3-6 minutes on
    # 2 cores before the first token: silence that long is the model working, not a dead server.
    "ORCHESTRATOR_LLM_TIMEOUT_SECONDS": "600",
}
# Set by choose_llm(), on top of deploy/local/stack.env.
LLM_VARIABLES = ("ORCHESTRATOR_LLM_BASE_URL", "ORCHESTRATOR_LLM_MODEL", "GATEWAY_MODEL_LABEL", "GATEWAY_PROVIDER_LABEL")


def say(message: str) -> None:
    print(f"[stack] {message}", flush=True)


def read_env_file(path: Path, root: Path = ROOT, local: Path = LOCAL) -> dict[str, str]:
    """KEY=VALUE lines; ${ROOT} and ${LOCAL} expand to the checkout and its .local folder (`root`, `local`)."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().replace("${ROOT}", str(root)).replace("${LOCAL}", str(local))
    return values


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """Status and body; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
    except OSError:
        return 0, b""


def http_ok(url: str, timeout: float = 2.0) -> bool:
    return http_get(url, timeout)[0] == 200


def model_names(base_url: str) -> list[str] | None:
    """Models an Ollama-protocol server lists, or None when it does not answer."""
    status, body = http_get(base_url.rstrip("/") + "/api/tags", timeout=3.0)
    if status != 200:
        return None
    try:
        return [str(model.get("name")) for model in json.loads(body).get("models", [])]
    except (ValueError, AttributeError):
        return None


def has_model(names: list[str], model: str) -> bool:
    wanted = model if ":" in model else f"{model}:latest"
    return any(name in (wanted, model) for name in names)


def choose_llm(env: dict[str, str]) -> None:
    """Ollama when OLLAMA_BASE_URL answers, else the local model server with its real small model."""
    chosen_model = os.environ.get("ORCHESTRATOR_LLM_MODEL")
    if "ORCHESTRATOR_LLM_BASE_URL" in os.environ:
        base_url = os.environ["ORCHESTRATOR_LLM_BASE_URL"]
        model = chosen_model or CHART_LLM_MODEL
        provider = env.get("ORCHESTRATOR_LLM_PROVIDER", "ollama")
        say(f"LLM: {model} at {base_url} (ORCHESTRATOR_LLM_BASE_URL)")
    else:
        ollama = os.environ.get("OLLAMA_BASE_URL", "").strip()
        listed = model_names(ollama) if ollama else None
        if listed is not None:
            base_url, model, provider = ollama, chosen_model or CHART_LLM_MODEL, "ollama"
            say(f"LLM: Ollama at {ollama}, model {model}")
            if not has_model(listed, model):
                say(
                    f"warning: Ollama does not have {model} (it has: {', '.join(listed) or 'nothing'}); "
                    f"run `ollama pull {model}` or set ORCHESTRATOR_LLM_MODEL"
                )
        else:
            if ollama:
                say(f"OLLAMA_BASE_URL={ollama} does not answer: using the local model server")
            base_url = f"http://127.0.0.1:{infra.MODEL_PORT}"
            model = chosen_model or LOCAL_LLM_MODEL
            provider = "stacgis model server"
            check_local_model(base_url, model)
            # Also for the scripted model: runs that ask for the embedded one (options.model) must fit too.
            for name, value in LOCAL_MODEL_SETTINGS.items():
                env[name] = os.environ.get(name, value)
    env["ORCHESTRATOR_LLM_BASE_URL"] = base_url
    env["ORCHESTRATOR_LLM_MODEL"] = model
    env.setdefault("GATEWAY_MODEL_LABEL", model)
    env.setdefault("GATEWAY_PROVIDER_LABEL", provider)


def check_local_model(base_url: str, model: str) -> None:
    request = urllib.request.Request(
        base_url + "/api/show", data=json.dumps({"model": model}).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5):
            say(f"LLM: {model} on the local model server ({base_url})")
    except urllib.error.HTTPError as error:
        reason = error.read().decode(errors="replace")[:300]
        say(f"warning: the local model server cannot answer with {model}: {reason}")
    except OSError as error:
        say(f"warning: the local model server does not answer: {error}")


def stack_env() -> dict[str, str]:
    """The services' environment: stack.env, then the caller's variables, then the LLM choice."""
    env = {**read_env_file(STACK_ENV), **os.environ}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    choose_llm(env)
    return env
