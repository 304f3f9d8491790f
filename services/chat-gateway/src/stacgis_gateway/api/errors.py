"""The gateway's one error table (`stacgis_common.http_errors`): every error of its API is
`{"field", "message", "code"}` plus what a refusal adds (a 409's `run_id`, a full gate's capacity)."""

from __future__ import annotations

from stacgis_common.http_errors import REFUSAL_ROWS, ErrorTable, Missing

ERRORS = ErrorTable(REFUSAL_ROWS, what="the gateway request")


def not_found(what: str) -> Missing:
    # Someone else's session, run or approval is reported exactly like one that does not exist.
    return Missing(f"{what} not found")
