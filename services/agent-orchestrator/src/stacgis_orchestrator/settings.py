"""Settings of the agent-orchestrator, read from `ORCHESTRATOR_*` environment variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import EmbeddingSettings

DEFAULT_MCP_SERVERS = {
    "raster": "http://127.0.0.1:8011/mcp",
    "vector": "http://127.0.0.1:8012/mcp",
    "knowledge": "http://127.0.0.1:8013/mcp",
    "memory": "http://127.0.0.1:8014/mcp",
}


class OrchestratorSettings(EmbeddingSettings):
    model_config = SettingsConfigDict(env_prefix="ORCHESTRATOR_", extra="ignore", frozen=True)

    port: int = 8001
    redis_url: str = "redis://127.0.0.1:56379/0"
    # Replaces the password of redis_url (a file in the secrets directory; see URL_PASSWORDS).
    redis_password: SecretStr | None = None

    # The chat model.
    llm_provider: Literal["ollama", "openai"] = "ollama"
    llm_base_url: str = "http://127.0.0.1:11434"
    llm_model: str = "qwen2.5-coder:1.5b"
    llm_api_key: SecretStr | None = None
    # Context window asked of Ollama (`num_ctx`) and the budget of the context guard.
    # 16k: the system prompt and every tool's schema (26 tools) take about 7k tokens before any result.
    llm_num_ctx: int = Field(default=16384, ge=512)
    # Tokens kept free for the answer when checking the context length.
    llm_max_output_tokens: int = Field(default=1024, ge=16)
    llm_keep_alive: str = "30m"
    # Ask reasoning models to think (Ollama `think`); unset sends nothing and lets the model decide.
    llm_think: bool | None = None
    llm_temperature: float | None = Field(default=None, ge=0)
    # Longest silence allowed while the model streams (and to connect): a stalled model fails the run.
    llm_timeout_seconds: float = Field(default=120.0, gt=0)
    # A model server that cannot be reached or is not ready (a restart) is waited for this long per
    # model call, retrying with backoff, before the run fails with model_unavailable.
    llm_unavailable_wait_seconds: float = Field(default=30.0, ge=0)
    # Send tool schemas natively; when false they are described in the system prompt instead.
    llm_native_tools: bool = True
    # Warm the model's cache with the fixed prompt prefix (system prompt + tools) at start, in the
    # background; unset: on for the ollama provider (a local server that caches the prefix).
    llm_warmup: bool | None = None
    # Model calls retried after the model reports a context overflow, each after compacting harder.
    context_overflow_retries: int = Field(default=3, ge=0, le=10)
    # Read tool calls written as text (<tool_call>{...}</tool_call>, JSON) when a model has no native calls.
    llm_text_tool_fallback: bool = True

    # Embeddings for dynamic tool selection (the model is named by EmbeddingSettings' fields). A slow
    # embedding server must not stall a step: ranking then falls back to keywords.
    embedding_timeout_seconds: float = Field(default=5.0, gt=0)

    # MCP tool servers: name -> URL of the /mcp endpoint. Order decides who keeps a colliding tool name.
    mcp_servers: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MCP_SERVERS))
    tool_refresh_seconds: float = Field(default=60.0, gt=0)
    # At start, tool servers not up yet are re-listed for up to this long; until all are listed (or the
    # time is over) the orchestrator is not ready, so no run gets a prompt without their tools.
    tool_listing_grace_seconds: float = Field(default=30.0, ge=0)
    tool_timeout_seconds: float = Field(default=60.0, gt=0)
    # Retries of read-only tools after a transient failure (connection error, 502/503/504).
    tool_retries: int = Field(default=2, ge=0, le=10)
    tool_retry_backoff_seconds: float = Field(default=0.25, ge=0)
    breaker_failure_threshold: int = Field(default=3, ge=1)
    breaker_reset_seconds: float = Field(default=30.0, gt=0)
    # Longer tool results are shaped to this size (JSON stays JSON: first list items and a count).
    max_tool_result_chars: int = Field(default=4_000, ge=100)

    # The loop.
    max_steps: int = Field(default=15, ge=1, le=100)
    history_window: int = Field(default=50, ge=2)
    # An answer quoting numbers that no tool result gave is withdrawn once and the model asked to look
    # them up or say what the data lacks (one more step); a second such answer stands, marked.
    grounding_retry: bool = True
    # An answer drawn from data that does not cover the question (a variable no collection holds,
    # years outside every collection of the variable, another variable's collection) is replaced by
    # a refusal naming what is missing, or sent back once for the right collection (`premises`).
    premise_check: bool = True
    # The orchestrator's own first call (`questions`): a knowledge search for a question about a
    # concept, a definition or a dataset's origin; add_memory for "remember that ...".
    first_calls: bool = True
    # Tools take places by name (`place: "Luxembourg"`, resolved by vector-tools). Off hides the
    # `place` argument from the model and tells it to look places up first, as before: an experiment
    # setting, to measure what naming places is worth (docs/eval.md).
    place_names: bool = True
    # Hosts a `set_map_style` URL may point the user's browser at (JSON list; "*.example.org" allows
    # its subdomains). Empty: only the built-in light, dark and satellite basemaps.
    map_style_hosts: list[str] = Field(default_factory=list)
    max_message_chars: int = Field(default=32_000, ge=1)
    max_history_messages: int = Field(default=500, ge=0)

    # all: every available tool on every step in a fixed order (a byte-stable prompt prefix that the
    # model server can keep cached); dynamic: the K best tools per step (shorter, but always cold).
    tool_selection: Literal["all", "dynamic"] = "all"
    # Dynamic tool selection: the K best MCP tools per step (see docs/benchmarks/tool-selection.md).
    tool_top_k: int = Field(default=8, ge=1)
    tool_keyword_weight: float = Field(default=0.1, ge=0)
    always_include_tools: list[str] = Field(
        default_factory=lambda: ["list_available_tools", "search_knowledge", "add_memory"]
    )
    always_include_frontend_tools: bool = True

    # Approval-gated tools (besides those whose schema says `x_requires_approval`).
    approval_tools: list[str] = Field(default_factory=list)
    approval_timeout_seconds: float = Field(default=300.0, gt=0)

    # Context given to the model at the start of a run.
    memory_server: str = "memory"
    memory_tool: str = "search_memories"
    memory_limit: int = Field(default=5, ge=0, le=50)
    context_resources: list[str] = Field(default_factory=lambda: ["collections://list", "vector://datasets/all"])
    resource_cache_seconds: float = Field(default=300.0, ge=0)
    context_timeout_seconds: float = Field(default=5.0, gt=0)
    max_resource_chars: int = Field(default=4_000, ge=100)

    # SSE comment heartbeat while a run is quiet.
    sse_ping_seconds: float = Field(default=15.0, gt=0)
    # Spans also appended as JSON lines to this file (local runs and tests).
    trace_file: str | None = None

    @field_validator("mcp_servers")
    @classmethod
    def _servers_are_urls(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not name or not name.replace("-", "").replace("_", "").isalnum():
                raise ValueError(f"server name {name!r} must be letters, digits, '-' or '_'")
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"server {name!r}: {url!r} is not an http(s) URL")
        return value

    @field_validator("llm_max_output_tokens")
    @classmethod
    def _output_fits_context(cls, value: int, info: ValidationInfo) -> int:
        num_ctx = info.data.get("llm_num_ctx")
        if isinstance(num_ctx, int) and value >= num_ctx // 2:
            raise ValueError(f"must be less than half of llm_num_ctx ({num_ctx})")
        return value
