"""The embedded model (Qwen2.5-Coder-1.5B-Instruct in the local model server) with the product's prompt.

    .venv/bin/python tests/bench/bench_model.py [--snapshot] [--threads N] [--threads-batch N] [--write]

Starts the model server on a free port with an empty prompt-state folder and sends the product's
system prompt with every tool schema (tests/bench/data/model_prompt.json; `--snapshot` rebuilds it
from the orchestrator's prompts module, its MCP tool catalog snapshot and its frontend tools) plus
one user question per request, streaming over /api/chat at temperature 0. Reports, per phase:

  cold            the first request: the whole system + tools prefix is read
  warm            later requests with other questions: the prefix comes from the KV cache
  after restart   a new server process that restored the saved state at start

and for each: time to the first chunk, the server's own time to the first generated token
(prompt_eval_duration), time to the first complete tool call, generated tokens/s, prompt tokens,
and the server's RSS. `--write` also writes docs/benchmarks/model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from stacgis_common.testing import free_port, run_service

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("data") / "model_prompt.json"
DOC = ROOT / "docs" / "benchmarks" / "model.md"
MODEL = "qwen2.5-coder:1.5b"
QUESTIONS = [
    "What is the mean elevation of Luxembourg?",
    "Zoom the map to Berlin.",
    "Which raster collections are available?",
    "Remember that I prefer metric units.",
]


def product_tools() -> list[Any]:
    """The product's tools (`RegisteredTool`s): the orchestrator's MCP tool catalog snapshot, its
    frontend tools and its built-in tools, in catalog order."""
    from importlib import resources

    from stacgis_orchestrator.tools.catalog import BUILTIN_TOOLS
    from stacgis_orchestrator.tools.frontend import frontend_tools
    from stacgis_orchestrator.tools.registry import RegisteredTool

    catalog = json.loads(resources.files("stacgis_orchestrator").joinpath("data/tool_catalog.json").read_text())
    tools = [
        RegisteredTool(
            name=tool["name"],
            description=tool.get("description", ""),
            input_schema=tool.get("inputSchema", {}),
            kind="mcp",
            server=server,
        )
        for server, entry in catalog["servers"].items()
        for tool in entry["tools"]
    ]
    return [*tools, *frontend_tools(), *BUILTIN_TOOLS]


def build_snapshot() -> dict[str, Any]:
    """System prompt and tools as the orchestrator sends them (tool selection "all", catalog order)."""
    from stacgis_orchestrator.llm.ollama import format_tools
    from stacgis_orchestrator.prompts import system_prompt

    tools = product_tools()
    return {
        "note": "system prompt + every tool, as sent to the model; rebuild with bench_model.py --snapshot",
        "system": system_prompt({}),
        "tools": format_tools([tool.spec() for tool in tools]),
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def ask(url: str, prompt: dict[str, Any], question: str) -> dict[str, Any]:
    body = {
        "model": MODEL,
        "messages": [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": question}],
        "tools": prompt["tools"],
        "options": {"temperature": 0, "num_predict": 200},
    }
    started = time.monotonic()
    first_chunk = first_call = None
    calls: list[str] = []
    final: dict[str, Any] = {}
    with (
        httpx.Client(timeout=httpx.Timeout(1800, connect=10)) as http,
        http.stream("POST", f"{url}/api/chat", json=body) as response,
    ):
        response.raise_for_status()
        for line in response.iter_lines():
            if not line:
                continue
            chunk = json.loads(line)
            now = time.monotonic() - started
            if "error" in chunk:
                raise RuntimeError(chunk["error"])
            message = chunk.get("message", {})
            if first_chunk is None and (message.get("content") or message.get("tool_calls")):
                first_chunk = now
            if message.get("tool_calls"):
                first_call = first_call if first_call is not None else now
                calls += [c["function"]["name"] + json.dumps(c["function"]["arguments"]) for c in message["tool_calls"]]
            if chunk.get("done"):
                final = chunk
    total = time.monotonic() - started
    eval_s = final.get("eval_duration", 0) / 1e9
    return {
        "question": question,
        "first_chunk_s": first_chunk,
        "first_token_s": final.get("prompt_eval_duration", 0) / 1e9,
        "tool_call_s": first_call,
        "calls": calls,
        "tokens_per_s": final.get("eval_count", 0) / eval_s if eval_s else 0.0,
        "prompt_tokens": final.get("prompt_eval_count", 0),
        "eval_count": final.get("eval_count", 0),
        "total_s": total,
    }


def wait_for_state(folder: Path, timeout: float = 120) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if list(folder.glob("*.npz")):
            return time.monotonic() - started
        time.sleep(0.5)
    return float("nan")


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(rows: list[tuple[str, dict[str, Any], float]]) -> str:
    lines = [
        "| phase | question | first chunk (s) | first token (s) | complete tool call (s) | tokens/s "
        "| prompt tokens | RSS (MB) | call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for phase, r, rss in rows:
        call = r["calls"][0] if r["calls"] else "(text)"
        lines.append(
            f"| {phase} | {r['question']} | {fmt(r['first_chunk_s'])} | {fmt(r['first_token_s'], 2)} | "
            f"{fmt(r['tool_call_s'])} | {fmt(r['tokens_per_s'])} | {r['prompt_tokens']} | {rss:.0f} | `{call[:70]}` |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshot", action="store_true", help="rebuild the prompt snapshot from the orchestrator")
    parser.add_argument("--threads", type=int, default=None, help="MODEL_SERVER_LLAMA_THREADS (default: the server's)")
    parser.add_argument("--threads-batch", type=int, default=None, help="MODEL_SERVER_LLAMA_THREADS_BATCH")
    parser.add_argument("--warm", type=int, default=len(QUESTIONS) - 1, help="warm requests after the cold one")
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args()

    if args.snapshot or not SNAPSHOT.exists():
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(build_snapshot(), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {SNAPSHOT.relative_to(ROOT)}")
    prompt = json.loads(SNAPSHOT.read_text())

    state_folder = tempfile.TemporaryDirectory(prefix="model-states-")
    state_dir = Path(state_folder.name)
    env = {"MODEL_SERVER_STATE_DIR": str(state_dir), "MODEL_SERVER_PRELOAD": "true"}
    if args.threads is not None:
        env["MODEL_SERVER_LLAMA_THREADS"] = str(args.threads)
    if args.threads_batch is not None:
        env["MODEL_SERVER_LLAMA_THREADS_BATCH"] = str(args.threads_batch)
    rows: list[tuple[str, dict[str, Any], float]] = []
    load_avg = os.getloadavg()

    port = free_port()
    started = time.monotonic()
    with run_service("stacgis_model_server", {**env, "MODEL_SERVER_PORT": str(port)}, port, timeout=300) as server:
        start_cold = time.monotonic() - started
        result = ask(server.url, prompt, QUESTIONS[0])
        rows.append(("cold", result, rss_mb(server.process.pid)))
        print(rows[-1])
        saved_after = wait_for_state(state_dir)
        for question in (QUESTIONS * 4)[1 : 1 + args.warm]:
            rows.append(("warm", ask(server.url, prompt, question), rss_mb(server.process.pid)))
            print(rows[-1])
    state_mb = sum(p.stat().st_size for p in state_dir.glob("*.npz")) / 1e6

    port = free_port()
    started = time.monotonic()
    with run_service("stacgis_model_server", {**env, "MODEL_SERVER_PORT": str(port)}, port, timeout=300) as server:
        start_restored = time.monotonic() - started
        rows.append(("after restart", ask(server.url, prompt, QUESTIONS[0]), rss_mb(server.process.pid)))
        print(rows[-1])

    state_folder.cleanup()
    warm = [r for phase, r, _ in rows if phase == "warm"]
    summary = [
        f"- prompt (system + {len(prompt['tools'])} tools + question): {rows[0][1]['prompt_tokens']} tokens",
        f"- server start to ready: {start_cold:.1f} s with no saved state, {start_restored:.1f} s restoring one "
        f"({state_mb:.0f} MB on disk, saved {saved_after:.1f} s after the cold answer)",
        f"- cold: first token {rows[0][1]['first_token_s']:.1f} s, "
        f"complete tool call {fmt(rows[0][1]['tool_call_s'])} s",
        f"- warm (median of {len(warm)}): first token {statistics.median(r['first_token_s'] for r in warm):.2f} s, "
        f"first chunk {statistics.median(r['first_chunk_s'] or 0 for r in warm):.1f} s, "
        f"{statistics.median(r['tokens_per_s'] for r in warm):.1f} tokens/s",
        f"- after restart: first token {rows[-1][1]['first_token_s']:.2f} s, "
        f"complete tool call {fmt(rows[-1][1]['tool_call_s'])} s",
        f"- machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"load average at start {load_avg[0]:.1f}; threads {args.threads or 'default'} / "
        f"batch {args.threads_batch or 'default'}",
    ]
    report = table(rows) + "\n\n" + "\n".join(summary)
    print("\n" + report)
    if args.write:
        text = DOC.read_text() if DOC.exists() else ""
        marker = "<!-- figures -->"
        head = text.split(marker)[0] if marker in text else text
        DOC.write_text(
            head.rstrip()
            + f"\n\n{marker}\n\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}:\n\n"
            + report
            + "\n"
        )
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
