"""Settings of knowledge-tools, from `KNOWLEDGE_*` environment variables; the shared ones are in `PgvectorSettings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import PgvectorSettings


class KnowledgeSettings(PgvectorSettings):
    model_config = SettingsConfigDict(env_prefix="KNOWLEDGE_", extra="ignore", frozen=True)

    port: int = 8013
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
    # Users (ids from the internal token) whose add_knowledge adds shared documents; everyone
    # else's additions are private to them. A JSON list, e.g. ["alice@example.org"].
    admin_users: frozenset[str] = frozenset()
