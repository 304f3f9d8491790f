"""The real tool servers, started exactly as their own test suites start them (their fixtures are
loaded from their conftest files, not copied), plus a canary HTTP server that hostile ids point at.

raster-tools is wired to the real vector-tools process (its `vector_server` argument resolves to the
vector-tools fixture here), so feature references travel the real internal endpoint.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stacgis_common.testing import REPO_ROOT, free_port

HERE = Path(__file__).parent
SERVICES = REPO_ROOT / "services"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "load"))

from hostile_servers import SUMMARY, Canary  # noqa: E402
from private_stack import PrivateStack, StackOptions, private_stack  # noqa: E402
from scripted_rules import reliability_rules  # noqa: E402


def _load(name: str, path: Path) -> ModuleType | None:
    """Import a conftest file of another suite under a unique module name (None if it is not there yet)."""
    if not path.exists():
        return None
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _fixtures(module: ModuleType | None, *names: str) -> dict[str, Any]:
    if module is None:
        return {}
    return {name: getattr(module, name) for name in names if hasattr(module, name)}


# Fixture functions re-exported here: pytest registers every fixture found in this module's namespace.
_shared = _load("stacgis_services_conftest", SERVICES / "conftest.py")
globals().update(_fixtures(_shared, "embedding_server", "tool_server_env"))
_raster = _load("stacgis_raster_tests_conftest", SERVICES / "raster-tools" / "tests" / "conftest.py")
globals().update(_fixtures(_raster, "demo_data", "stac_dir", "raster_service"))
_vector = _load("stacgis_vector_tests_conftest", SERVICES / "vector-tools" / "tests" / "conftest.py")
globals().update(_fixtures(_vector, "vector_env", "vector_server", "cache_dir"))
_knowledge = _load("stacgis_knowledge_tests_conftest", SERVICES / "knowledge-tools" / "tests" / "conftest.py")
_memory = _load("stacgis_memory_tests_conftest", SERVICES / "memory-tools" / "tests" / "conftest.py")
KNOWLEDGE_FIXTURES = ("knowledge_env", "knowledge_server", "knowledge_service")
MEMORY_FIXTURES = ("memory_env", "memory_server", "memory_service")
globals().update(_fixtures(_knowledge, *KNOWLEDGE_FIXTURES))
globals().update(_fixtures(_memory, *MEMORY_FIXTURES))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not SUMMARY:
        return
    write = terminalreporter.write_line
    write("")
    write("hostile tool calls per tool (tool errors are the expected answer to hostile input):")
    write(f"  {'server':16} {'tool':30} {'calls':>5} {'errors':>6} {'results':>7} {'slowest':>8} {'findings':>8}")
    for row in SUMMARY:
        write(
            f"  {row['server']:16} {row['tool']:30} {row['calls']:>5} {row['tool_errors']:>6} {row['results']:>7}"
            f" {row['slowest_s']:>7.2f}s {row['findings']:>8}"
        )


@pytest.fixture(scope="session")
def canary() -> Iterator[Canary]:
    found = Canary(free_port())

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            found.hits.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"canary")

        do_GET = do_POST = do_HEAD = do_PUT = _record

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", found.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()


@pytest.fixture(scope="session")
def hostile_stack() -> Iterator[PrivateStack]:
    """The whole product (ingress, gateway, orchestrator, tool servers, scripted model) on free ports.

    Trusted-header auth, so tests choose who they are (X-Forwarded-User) through the ingress; no rate
    limit, so schemathesis can explore; a throwaway database, since the tests plant poisoned documents."""
    env = {
        "GATEWAY_AUTH_MODE": "trusted-header",
        "GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32",
        "GATEWAY_TRUSTED_USER_HEADER": "X-Forwarded-User",
        "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
        "GATEWAY_LOG_LEVEL": "WARNING",
        "ORCHESTRATOR_LOG_LEVEL": "WARNING",
        "ORCHESTRATOR_RESOURCE_CACHE_SECONDS": "0",
        "MODEL_SERVER_PRELOAD": "true",
    }
    options = StackOptions(
        rules=reliability_rules(), env=env, fresh_database=True, ingress_passes_user_header="X-Forwarded-User"
    )
    with private_stack(options) as stack:
        yield stack
