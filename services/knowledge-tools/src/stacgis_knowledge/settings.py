"""Settings of knowledge-tools, read from `KNOWLEDGE_*` environment variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import ServiceSettings


class KnowledgeSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="KNOWLEDGE_", extra="ignore", frozen=True)

    port: int = 8013
    database_url: str = "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis"
    db_pool_size: int = Field(default=10, ge=1, le=100)

    embedding_provider: Literal["ollama", "openai"] = "ollama"
    embedding_base_url: str = "http://127.0.0.1:11434"
    embedding_model: str = "all-minilm"
    # pgvector's HNSW indexes vectors of at most 2000 dimensions.
    embedding_dimension: int = Field(default=384, ge=1, le=2000)
    embedding_api_key: SecretStr | None = None
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)

    max_query_chars: int = Field(default=500, ge=1, le=10_000)
    max_title_chars: int = Field(default=200, ge=1, le=2_000)
    max_content_chars: int = Field(default=100_000, ge=1, le=10_000_000)
    max_source_chars: int = Field(default=500, ge=1, le=10_000)
    max_tags: int = Field(default=20, ge=0, le=1000)
    max_tag_chars: int = Field(default=50, ge=1, le=1000)
    default_limit: int = Field(default=5, ge=1)
    max_limit: int = Field(default=20, ge=1, le=1000)
    # Words and punctuation marks per chunk. all-MiniLM-L6-v2 reads at most 256 word pieces;
    # 180 leaves room for the heading and for words split into several pieces.
    chunk_max_tokens: int = Field(default=180, ge=20, le=8192)
    candidates_per_ranker: int = Field(default=50, ge=1, le=1000)
    rrf_k: int = Field(default=60, ge=1)
    # HNSW index build parameters and search breadth, chosen with tests/bench/bench_vector_index.py
    # (docs/benchmarks/pgvector.md). m and ef_construction apply when the index is built.
    hnsw_m: int = Field(default=32, ge=2, le=100)
    hnsw_ef_construction: int = Field(default=128, ge=4, le=1000)
    hnsw_ef_search: int = Field(default=64, ge=1, le=1000)
