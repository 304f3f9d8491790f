"""schemathesis against the gateway's own OpenAPI document, through the ingress of a private stack:
valid and invalid requests for every operation; no 5xx (a 503 must be the documented gate refusal or
dependency outage), and every response conforms to the document (status code, content type, headers,
body schema).

Examples per operation and mode: STACGIS_SCHEMATHESIS_EXAMPLES (default 12; runs cost a model turn
each, so the chat operations get half).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from private_stack import PrivateStack
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = int(os.environ.get("STACGIS_SCHEMATHESIS_EXAMPLES", "12"))
USER = {"X-Forwarded-User": "schemathesis-user"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def run_operation(operation: Any, base_url: str, mode: GenerationMode, examples: int) -> str | None:
    """The first failure of `examples` generated requests, or None."""
    failure: list[str] = []

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: Any) -> None:
        response = case.call(base_url=base_url, headers=USER, timeout=60)
        if response.status_code == 503 and "retry" not in response.text.lower():
            failure.append(f"503 without a retry hint: {response.text[:300]}")
            return
        try:
            case.validate_response(response, checks=CHECKS, headers=USER)
        except (Exception, BaseExceptionGroup) as error:  # schemathesis' FailureGroup: keep its report
            failure.append(str(error)[:3000])
            raise

    try:
        check()
    except Unsatisfiable:
        return None  # nothing invalid can be generated (e.g. no parameters at all in negative mode)
    except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001 - any failed check is a finding to report
        return failure[0] if failure else f"{type(error).__name__}: {str(error)[:2000]}"
    return failure[0] if failure else None


@pytest.fixture(scope="module")
def gateway_schema(hostile_stack: PrivateStack) -> Any:
    return schemathesis.openapi.from_url(f"{hostile_stack.base_url}/api/v1/openapi.json")


def test_the_gateway_api_has_no_server_errors_and_conforms_to_its_schema(
    gateway_schema: Any, hostile_stack: PrivateStack
) -> None:
    operations = [result.ok() for result in gateway_schema.get_all_operations()]
    assert len(operations) >= 8, f"the OpenAPI document lists only {len(operations)} operations"
    failures = []
    for operation in operations:
        examples = (
            max(3, EXAMPLES // 2) if "/chat/stream" in operation.path or operation.path == "/api/v1/chat/" else EXAMPLES
        )
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            problem = run_operation(operation, hostile_stack.base_url, mode, examples)
            if problem:
                failures.append(f"{operation.method.upper()} {operation.path} ({mode.value}):\n{problem}")
    assert not failures, f"{len(failures)} operations failed:\n\n" + "\n\n".join(failures)
