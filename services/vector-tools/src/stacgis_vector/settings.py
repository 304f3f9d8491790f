"""Settings of vector-tools, from `VECTOR_*` environment variables; the shared ones are in `PgvectorSettings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stacgis_common.settings import PgvectorSettings


class VectorSettings(PgvectorSettings):
    model_config = SettingsConfigDict(env_prefix="VECTOR_", extra="ignore", frozen=True)

    port: int = 8012
    max_query_chars: int = Field(default=200, ge=1, le=10_000)
    default_limit: int = Field(default=10, ge=1)
    max_limit: int = Field(default=50, ge=1, le=1000)
    max_bbox_limit: int = Field(default=500, ge=1, le=10_000)
    # City names one map view asks for (GET /places/labels).
    max_label_limit: int = Field(default=300, ge=1, le=5_000)
    # A dataset load silent this long (no features embedded, nothing written) is reported stalled, not loading:
    # a chunk of 1,024 embeddings takes seconds, the copy of the largest dataset about a minute.
    load_stalled_seconds: float = Field(default=300.0, gt=0)
    # Geometries with more vertices come back simplified (the tolerance is stated in the result).
    max_result_vertices: int = Field(default=500, ge=10, le=1_000_000)
