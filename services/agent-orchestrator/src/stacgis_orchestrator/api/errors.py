"""Client errors in FastAPI's shape, naming the field at fault."""

from __future__ import annotations

from fastapi import HTTPException


class InvalidField(HTTPException):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(
            status_code=422,
            detail=[{"loc": ["body", *field.split(".")], "msg": f"{field}: {message}", "type": "value_error"}],
        )
