"""Helpers of the knowledge-tools tests (a distinct module name: test folders share sys.path)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from stacgis_common.testing import REPO_ROOT, mcp_client, run_module, token_for

KNOWLEDGE_DIR = REPO_ROOT / "knowledge"


def run_ingest(env: dict[str, str], directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_module("stacgis_knowledge.ingest", str(directory), *extra, env=env, timeout=600)


async def documents(url: str, user: str = "tester") -> list[dict[str, Any]]:
    """The documents `user` can search (their own and the shared ones)."""
    async with mcp_client(url + "/mcp", token_for(user)) as session:
        read = await session.read_resource("knowledge://documents")
    return list(json.loads(read.contents[0].text)["documents"])
