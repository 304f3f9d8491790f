"""`python -m stacgis_orchestrator.tool_snapshot`: record the live `tools/list` of the tool servers.

The tool-selection benchmark ranks the real tools of the product; this writes them to a JSON file
so the benchmark also runs when the servers are not up. Servers that do not answer keep the entries
the file already has (marked with their source), so a partial stack refreshes what it can.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from .services import service_headers
from .settings import OrchestratorSettings
from .tools.mcp_client import ToolServerClient, ToolServerError

DEFAULT_OUT = Path(__file__).parent / "data" / "tool_catalog.json"


async def list_live(servers: dict[str, str], settings: OrchestratorSettings) -> dict[str, list[dict[str, Any]] | str]:
    headers = service_headers(settings)
    found: dict[str, list[dict[str, Any]] | str] = {}
    for name, url in servers.items():
        client = ToolServerClient(name, url)
        try:
            async with asyncio.timeout(10):
                tools = await client.list_tools(headers)
            found[name] = [
                {
                    "name": tool.name,
                    "description": tool.description or "",
                    "inputSchema": tool.input_schema,
                    "readOnly": bool(tool.annotations and tool.annotations.read_only_hint),
                }
                for tool in tools
            ]
        except (ToolServerError, TimeoutError) as error:
            found[name] = getattr(error, "message", "timed out")
        finally:
            await client.aclose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stacgis_orchestrator.tool_snapshot", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--servers", help="JSON map name -> /mcp URL (default: ORCHESTRATOR_MCP_SERVERS)")
    options = parser.parse_args()
    settings = OrchestratorSettings()
    servers = json.loads(options.servers) if options.servers else settings.mcp_servers
    existing: dict[str, Any] = json.loads(options.out.read_text()) if options.out.exists() else {"servers": {}}
    live = asyncio.run(list_live(servers, settings))
    for name, tools in live.items():
        if isinstance(tools, str):
            kept = existing["servers"].get(name)
            print(
                f"{name}: not reachable ({tools}); kept {len(kept['tools']) if kept else 0} recorded tools",
                file=sys.stderr,
            )
            continue
        existing["servers"][name] = {"source": "live tools/list", "tools": tools}
        print(f"{name}: {len(tools)} tools recorded", file=sys.stderr)
    options.out.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
