"""End-to-end scenarios against the running stack (`make up`), through the local ingress.

Start the stack with the scripted model first:

    ORCHESTRATOR_LLM_MODEL=scripted make up
    .venv/bin/pytest -q tests/e2e

A scenario whose services are not up fails, naming them: it never skips.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from .client import CHAT_PATH, ChatUser, ScriptedModel, missing_components, nonce

SCRIPTED_MODEL = "scripted"


async def require(*components: str, scripted: bool = True) -> None:
    """Fail the test (naming what is missing) unless the chat path and these components are ready."""
    names = list(dict.fromkeys([*CHAT_PATH, *components]))
    missing = await missing_components(names)
    if missing:
        lines = "\n".join(f"  {name}: {problem}" for name, problem in missing.items())
        pytest.fail(
            f"the stack is not up: {', '.join(missing)} not ready\n{lines}\n"
            f"start it with `ORCHESTRATOR_LLM_MODEL=scripted make up` (`make status` shows each part)",
            pytrace=False,
        )
    if scripted:
        user = ChatUser()
        try:
            model = (await user.info()).get("model")
        finally:
            await user.aclose()
        if model != SCRIPTED_MODEL:
            pytest.fail(
                f"the stack answers with model {model!r}; these scenarios need the scripted model: "
                f"`make down && ORCHESTRATOR_LLM_MODEL=scripted make up`",
                pytrace=False,
            )


@pytest_asyncio.fixture
async def scripted() -> AsyncIterator[ScriptedModel]:
    model = ScriptedModel()
    try:
        yield model
    finally:
        await model.aclose()


@pytest.fixture
def tag() -> str:
    return nonce()


@pytest_asyncio.fixture
async def user() -> AsyncIterator[ChatUser]:
    browser = ChatUser()
    try:
        yield browser
    finally:
        await browser.aclose()
