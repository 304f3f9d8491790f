"""Rules for the scripted model, one set per task, written from the task's own script.

The scripted model then plays the right course of action (the calls, then an answer quoting the tool
results through the model server's placeholders), so a run against it must score 100 %: what fails
is the harness, the oracle or the stack, never the model. Rules match the task's exact question and
the step, and go before the model server's own rules; they are removed again afterwards.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from .client import StackError
from .tasks import Task

RULE_PREFIX = "eval-"
# A setup message "Remember that ..." is saved as a memory, whatever the task.
REMEMBER = r"(?i)remember that (.+?)\s*$"


def _exact(text: str) -> str:
    return "^" + re.escape(text) + "$"


def rules_for(task: Task) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for index, message in enumerate(task.setup):
        match = _exact(message)
        rules.append(
            {
                "name": f"{RULE_PREFIX}{task.id}-setup{index}-save",
                "match": {"last_user": match, "step": 0},
                "tool_calls": [
                    {"name": "add_memory", "arguments": {"content": "{{last_user:" + REMEMBER + "}}", "kind": "fact"}}
                ],
            }
        )
        rules.append(
            {
                "name": f"{RULE_PREFIX}{task.id}-setup{index}-done",
                "match": {"last_user": match, "step": 1},
                "content": "Noted, I will remember that.",
            }
        )
    question = _exact(task.question)
    for step, call in enumerate(task.script.calls):
        rules.append(
            {
                "name": f"{RULE_PREFIX}{task.id}-call{step}",
                "match": {"last_user": question, "step": step},
                "tool_calls": [{"name": call.name, "arguments": call.arguments}],
            }
        )
    rules.append(
        {
            "name": f"{RULE_PREFIX}{task.id}-answer",
            "match": {"last_user": question, "step": len(task.script.calls)},
            "content": task.script.answer,
            "chunk_chars": 40,
        }
    )
    return rules


class ScriptedRules:
    """Installs the tasks' rules on the model server and removes exactly those afterwards."""

    def __init__(self, model_server_url: str) -> None:
        self.url = model_server_url.rstrip("/")
        self.names: set[str] = set()

    def install(self, tasks: list[Task]) -> int:
        rules = [rule for task in tasks for rule in rules_for(task)]
        try:
            response = httpx.post(
                f"{self.url}/_scripted/rules", json={"rules": rules, "position": "prepend"}, timeout=30.0
            )
        except httpx.HTTPError as error:
            raise StackError(f"the model server at {self.url} does not answer: {error}") from error
        if response.status_code != 200:
            raise StackError(
                f"the model server refused the eval rules: HTTP {response.status_code} {response.text[:500]}"
            )
        self.names = {str(rule["name"]) for rule in rules}
        return len(rules)

    def remove(self) -> None:
        if not self.names:
            return
        try:
            listing = httpx.get(f"{self.url}/_scripted/rules", timeout=30.0).json()
            keep = [rule for rule in listing["rules"] if rule.get("name") not in self.names]
            httpx.put(f"{self.url}/_scripted/rules", json={"rules": keep}, timeout=30.0).raise_for_status()
        except (httpx.HTTPError, ValueError, KeyError):
            pass  # a restarted model server has its file rules only anyway
        self.names.clear()
