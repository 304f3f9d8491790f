"""Settings of the fault suite's stack (documented in docs/reliability.md)."""

GATE = 20
# Fault settings (documented in docs/reliability.md): a dead replica's slots and runs are reclaimed
# after SLOT_TTL seconds; a silent model fails a run after LLM_TIMEOUT seconds.
SLOT_TTL_SECONDS = 10
LLM_TIMEOUT_SECONDS = 5
TOOL_TIMEOUT_SECONDS = 5
BREAKER_RESET_SECONDS = 3

FAULT_ENV = {
    "GATEWAY_MAX_CONCURRENT_RUNS": str(GATE),
    "GATEWAY_SLOT_TTL_SECONDS": str(SLOT_TTL_SECONDS),
    "GATEWAY_SHUTDOWN_GRACE_SECONDS": "2",
    "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
    "GATEWAY_LOG_LEVEL": "WARNING",
    "ORCHESTRATOR_LLM_TIMEOUT_SECONDS": str(LLM_TIMEOUT_SECONDS),
    "ORCHESTRATOR_TOOL_TIMEOUT_SECONDS": str(TOOL_TIMEOUT_SECONDS),
    "ORCHESTRATOR_BREAKER_RESET_SECONDS": str(BREAKER_RESET_SECONDS),
    "ORCHESTRATOR_LOG_LEVEL": "WARNING",
    "MODEL_SERVER_PRELOAD": "true",
}
