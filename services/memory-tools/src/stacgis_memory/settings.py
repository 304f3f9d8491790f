"""Settings of memory-tools, from `MEMORY_*` environment variables; the shared ones are in `PgvectorSettings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import PgvectorSettings


class MemorySettings(PgvectorSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore", frozen=True)

    port: int = 8014
    max_content_chars: int = Field(default=1000, ge=1, le=100_000)
    max_query_chars: int = Field(default=500, ge=1, le=10_000)
    default_limit: int = Field(default=5, ge=1)
    max_limit: int = Field(default=50, ge=1, le=1000)
    recent_limit: int = Field(default=20, ge=1, le=1000)
    # A user's store is bounded so that one account cannot grow the table without end.
    max_memories_per_user: int = Field(default=1000, ge=1)
    # Cosine similarity at or above which a new memory replaces its nearest existing one.
    duplicate_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
