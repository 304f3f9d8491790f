"""The model picker: GET /models is the orchestrator's list; a message's `model` is checked against it (an
unknown one is a 422 naming the field) and reaches the orchestrator as the run's `options.model`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gateway_helpers import Gateways, chat, new_user, user

from stacgis_common.auth import Identity, mint_for
from stacgis_common.settings import ServiceSettings
from stacgis_common.testing import error_of


async def _orchestrators_list(client: httpx.AsyncClient, gateways: Gateways) -> dict[str, Any]:
    token = mint_for(ServiceSettings(), Identity(user_id="test"))
    response = await client.get(f"{gateways.orchestrator.url}/v1/models", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    listed: dict[str, Any] = response.json()
    return listed


async def _run(client: httpx.AsyncClient, gateways: Gateways, run_id: str) -> dict[str, Any]:
    runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
    run: dict[str, Any] = next(run for run in runs if run["run_id"] == run_id)
    return run


@pytest.mark.asyncio
async def test_models_lists_the_orchestrators_models_and_a_chosen_one_reaches_the_run(gateways: Gateways) -> None:
    ava = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        offered = await _orchestrators_list(client, gateways)
        response = await client.get(f"{gateways.a.url}/api/v1/models", headers=user(ava))
        assert response.status_code == 200, response.text
        assert response.json() == {"default": offered["default"], "models": offered["models"]}
        assert len(offered["models"]) > 1  # a choice to make

        other = next(name for name in offered["models"] if name != offered["default"])
        chosen = await chat(client, gateways.b.url, "which model?", user(ava), model=other)
        assert chosen.status == 200 and chosen.names[-1] == "done", chosen.body
        assert (await _run(client, gateways, chosen.run_id))["model"] == other
        assert chosen.events[0].data["runStarted"]["model"] == other
        # Without a choice the orchestrator's default answers (the request names none).
        plain = await chat(client, gateways.b.url, "and now?", user(ava), session_id=chosen.session_id)
        assert (await _run(client, gateways, plain.run_id))["model"] is None


@pytest.mark.asyncio
async def test_an_unknown_model_is_a_422_naming_the_field_and_starts_nothing(gateways: Gateways) -> None:
    ben = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        before = len((await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json())
        for model in ("no-such-model", "", "x" * 201, 7):
            response = await client.post(
                f"{gateways.a.url}/api/v1/chat/stream", json={"message": "hello", "model": model}, headers=user(ben)
            )
            assert error_of(response, 422, "model")["code"] == "invalid_argument", model
        unknown = await client.post(
            f"{gateways.a.url}/api/v1/chat/stream",
            json={"message": "hello", "model": "no-such-model"},
            headers=user(ben),
        )
        assert error_of(unknown, 422, "model")["message"].startswith("model: unknown model 'no-such-model'; ")
        assert len((await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()) == before
        assert (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(ben))).json() == []
