"""The fault suite's private stack: two gateways behind the ingress, the orchestrator, the four tool
servers, the scripted model server, and Postgres and Redis of its own (restarted by the tests; the
shared ones on 55432/56379 are never touched)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "load"))

from fault_settings import FAULT_ENV
from private_stack import PrivateStack, StackOptions, private_stack
from scripted_rules import reliability_rules


@pytest.fixture(scope="session")
def fault_stack() -> Iterator[PrivateStack]:
    with private_stack(StackOptions(gateways=2, rules=reliability_rules(), env=FAULT_ENV)) as stack:
        yield stack
