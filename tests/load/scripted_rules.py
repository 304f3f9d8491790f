"""What the scripted model does for the reliability suites: each message carries a tag choosing a rule.

`[load]`            one raster point query, then an answer streamed in small pieces (a typical run)
`[tool:<server>]`   one call to a cheap tool of that tool server, then an answer
`[plain]`           an answer with no tool (the benchmarks' time to first token and token rate)
`[paced]`           the same kind of answer at a real model's pace, 150 deltas per second
"""

from __future__ import annotations

from typing import Any

# A real model's streaming pace (deltas per second) for the benchmarks' paced rows.
PACED_PER_SECOND = 150
ANSWER = "Here is what I found for that place, with the numbers from the data. "

# One cheap, read-only call per tool server (its arguments are correct for the demo data).
TOOL_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "raster": ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": 6.13, "lat": 49.61}),
    "vector": ("search_vector_features", {"query": "Berlin", "limit": 1}),
    "knowledge": ("search_knowledge", {"query": "digital elevation model"}),
    "memory": ("search_memories", {"query": "preferred units"}),
}


def answer_rule(
    name: str, match: dict[str, Any], repeat: int = 2, chunk_chars: int = 8, delay_ms: float = 15
) -> dict[str, Any]:
    return {"name": name, "match": match, "content": ANSWER * repeat, "chunk_chars": chunk_chars, "delay_ms": delay_ms}


def tool_rules(tag: str, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    pattern = "\\[" + tag.replace("[", "").replace("]", "") + "\\]"
    return [
        {
            "name": f"{tag}-call",
            "match": {"last_user": pattern, "step": 0},
            "tool_calls": [{"name": tool, "arguments": arguments}],
        },
        # Whatever the tool answered (a result or an error the orchestrator reported back), answer.
        answer_rule(f"{tag}-answer", {"last_user": pattern, "last_tool": tool}),
    ]


def reliability_rules() -> list[dict[str, Any]]:
    rules = tool_rules("load", *TOOL_CALLS["raster"])
    for server, (tool, arguments) in TOOL_CALLS.items():
        rules += tool_rules(f"tool:{server}", tool, arguments)
    rules.append(answer_rule("plain", {"last_user": "\\[plain\\]"}, repeat=8, chunk_chars=4, delay_ms=0))
    rules.append(
        answer_rule("paced", {"last_user": "\\[paced\\]"}, repeat=4, chunk_chars=4, delay_ms=1000 / PACED_PER_SECOND)
    )
    return rules


def stall_rule() -> dict[str, Any]:
    """Accept every chat request and never answer (the model server hangs)."""
    return {"name": "stall-everything", "match": {}, "stall": True}
