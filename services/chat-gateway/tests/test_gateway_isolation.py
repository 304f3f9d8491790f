"""A user sees and touches only their own sessions, runs and approvals; everything else is a plain 404."""

from __future__ import annotations

import httpx
import pytest
from gateway_helpers import Gateways, chat, new_user, resume, user

from stacgis_common.testing import error_of


@pytest.mark.asyncio
async def test_another_users_session_and_run_are_404_everywhere(gateways: Gateways) -> None:
    owner, other = new_user(), new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        done = await chat(client, gateways.a.url, "mine", user(owner))
        session_id, run_id = done.session_id, done.run_id
        running = await chat(client, gateways.a.url, "[tool][approval] mine too", user(owner), stop_after=3)
        approval_id = running.events[-1].data["approvalRequired"]["approvalId"]

        for base in (gateways.a.url, gateways.b.url):
            api = f"{base}/api/v1/chat"
            attempts = {
                "history": await client.get(f"{api}/session/{session_id}/history", headers=user(other)),
                "rename": await client.patch(f"{api}/session/{session_id}", json={"title": "x"}, headers=user(other)),
                "delete": await client.delete(f"{api}/session/{session_id}", headers=user(other)),
                "cancel": await client.post(f"{api}/runs/{running.run_id}/cancel", headers=user(other)),
                "approval": await client.post(
                    f"{api}/approvals/{approval_id}", json={"approved": True}, headers=user(other)
                ),
            }
            things = {"history": "session", "rename": "session", "delete": "session", "cancel": "run"}
            for what, response in attempts.items():
                assert error_of(response, 404)["message"] == f"{things.get(what, what)} not found", what
            hijack = await chat(client, base, "let me in", user(other), session_id=session_id)
            assert hijack.error(404)["message"] == "session not found"
            peek = await resume(client, base, run_id, None, user(other))
            assert peek.error(404)["message"] == "run not found" and peek.events == []
            assert (await client.get(f"{api}/sessions", headers=user(other))).json() == []
            assert (await client.get(f"{base}/api/v1/usage", headers=user(other))).json()["runs"] == 0

        # Unknown ids answer exactly the same, so ids cannot be probed.
        unknown = await client.get(
            f"{gateways.a.url}/api/v1/chat/session/00000000-0000-4000-8000-000000000000/history", headers=user(other)
        )
        assert error_of(unknown, 404) == {"field": None, "message": "session not found", "code": "not_found"}

        # Nothing the other user tried changed anything for the owner.
        history = (
            await client.get(f"{gateways.b.url}/api/v1/chat/session/{session_id}/history", headers=user(owner))
        ).json()
        assert history["title"] == "mine" and [m["content"] for m in history["messages"]] == ["mine", "Echo: mine"]
        approved = await client.post(
            f"{gateways.b.url}/api/v1/chat/approvals/{approval_id}", json={"approved": True}, headers=user(owner)
        )
        assert approved.status_code == 200
        rest = await resume(client, gateways.a.url, running.run_id, running.events[-1].id, user(owner))
        assert rest.names[0] == "tool_result" and rest.names[-1] == "done"
