"""The orchestrator's one error table (`stacgis_common.http_errors`): every error of its API is
`{"field", "message", "code"}`, a bad field a 422 naming it (`ArgumentError`)."""

from __future__ import annotations

from stacgis_common.http_errors import REFUSAL_ROWS, ErrorTable

ERRORS = ErrorTable(REFUSAL_ROWS, what="the orchestrator request")
