"""Agent and LLM: the orchestrator's ReAct loop and its model client (Ollama has no metrics of its own)."""

from __future__ import annotations

from ..panels import DashboardSpec, PanelSpec, Query, Row, quantile, rate, ratio_or_zero, rising, sel, volume

OPERATION = "gen_ai_client_operation_duration_seconds"
OUTPUT_TOKENS = 'gen_ai_token_type="output"'
# The GenAI conventions set error.type only on failed calls.
SUCCEEDED = 'error_type=""'

model = Row(
    "Model calls",
    (
        PanelSpec(
            title="Model calls per second",
            description=(
                "Chat completions the orchestrator asked of the LLM, by model and error type (empty: succeeded), "
                f"from {OPERATION}_count. One agent step is one call."
            ),
            unit="ops",
            queries=(
                Query(
                    f"sum by (gen_ai_request_model, error_type) ({rate(OPERATION + '_count')})",
                    "{{gen_ai_request_model}} {{error_type}}",
                ),
            ),
            thresholds=volume(20),
            width=8,
        ),
        PanelSpec(
            title="Model call duration",
            description=(
                f"p50 and p95 of a successful model call, request to last streamed token ({OPERATION}). "
                "Long answers and cold model loads make it grow; compare with time to first token."
            ),
            unit="s",
            queries=(
                Query(quantile(0.5, OPERATION, "", SUCCEEDED), "p50"),
                Query(quantile(0.95, OPERATION, "", SUCCEEDED), "p95"),
            ),
            thresholds=rising(10, 30),
            width=8,
        ),
        PanelSpec(
            title="Model time to first token",
            description=(
                "p50 and p95 from sending a request to the LLM to its first streamed token "
                "(gen_ai_server_time_to_first_token_seconds, measured by the client). Rising values mean the "
                "model server is queueing (OLLAMA_NUM_PARALLEL), swapping models or prompts are long."
            ),
            unit="s",
            queries=(
                Query(quantile(0.5, "gen_ai_server_time_to_first_token_seconds"), "p50"),
                Query(quantile(0.95, "gen_ai_server_time_to_first_token_seconds"), "p95"),
            ),
            thresholds=rising(2, 10),
            width=8,
        ),
        PanelSpec(
            title="Output tokens per second of model time",
            description=(
                "Generated (output) tokens divided by the time spent in model calls: the LLM's decoding speed as "
                "the orchestrator sees it. From gen_ai_client_token_usage and "
                f"{OPERATION}. A GPU should give tens of tokens/s per stream; single digits means CPU or contention."
            ),
            unit="short",
            queries=(
                Query(
                    f"sum({rate('gen_ai_client_token_usage_sum', OUTPUT_TOKENS)})"
                    f" / sum({rate(OPERATION + '_sum', SUCCEEDED)})",
                    "tokens/s",
                ),
            ),
            thresholds=((None, "red"), (5, "orange"), (20, "green")),
            width=8,
        ),
        PanelSpec(
            title="Tokens per second by type",
            description=(
                "Prompt (input) and generated (output) tokens per second, from gen_ai_client_token_usage. Input "
                "grows with history length and tool results fed back to the model."
            ),
            unit="short",
            queries=(
                Query(f"sum by (gen_ai_token_type) ({rate('gen_ai_client_token_usage_sum')})", "{{gen_ai_token_type}}"),
            ),
            thresholds=volume(2000),
            width=8,
        ),
        PanelSpec(
            title="Model errors per second by kind",
            description=(
                "Failed model calls by kind (stacgis_model_errors_total): model_unavailable (cannot connect, "
                "502-504 or unknown model) and model_timeout feed StacgisModelServerUnreachable; model_error, "
                "tools_unsupported and context_too_long are answers the server refused. Any steady rate means "
                "users see error events."
            ),
            unit="ops",
            queries=(Query(f"sum by (kind) ({rate('stacgis_model_errors_total')})", "{{kind}}"),),
            thresholds=rising(0.01, 0.1),
            width=8,
        ),
    ),
)

agent = Row(
    "Agent loop",
    (
        PanelSpec(
            title="Runs in progress",
            description=(
                "Agent runs executing now, summed over orchestrator replicas (stacgis_agent_active_runs). "
                "Bounded by the gateway's concurrency gate."
            ),
            unit="short",
            queries=(Query(f"sum({sel('stacgis_agent_active_runs')})", "runs"),),
            thresholds=volume(20),
            kind="stat",
            width=6,
        ),
        PanelSpec(
            title="Steps per run",
            description=(
                "p50 and p95 of ReAct steps (model calls) a run needed before its final answer "
                "(stacgis_agent_steps_per_run). Runs that hit the step budget get a forced answer: a p95 at the "
                "budget means the model loops on tools."
            ),
            unit="short",
            queries=(
                Query(quantile(0.5, "stacgis_agent_steps_per_run"), "p50"),
                Query(quantile(0.95, "stacgis_agent_steps_per_run"), "p95"),
            ),
            thresholds=rising(5, 8),
            width=9,
        ),
        PanelSpec(
            title="Tool selection time",
            description=(
                "p95 of choosing the tools offered for a step (stacgis_tool_selection_seconds): every "
                "available tool in a fixed order (ORCHESTRATOR_TOOL_SELECTION=all), or the top K by "
                "embedding the question plus keyword overlap (dynamic). Slow values point at the "
                "embeddings server."
            ),
            unit="s",
            queries=(Query(quantile(0.95, "stacgis_tool_selection_seconds"), "p95"),),
            thresholds=rising(0.25, 1),
            width=9,
        ),
        PanelSpec(
            title="Runs finished per second by outcome",
            description=(
                "Agent runs the orchestrator finished, by outcome (stacgis_agent_runs_total). Errors come from "
                "the model or from tool failures the run could not recover from."
            ),
            unit="ops",
            queries=(Query(f"sum by (outcome) ({rate('stacgis_agent_runs_total')})", "{{outcome}}"),),
            thresholds=volume(10),
            stack=True,
        ),
        PanelSpec(
            title="Share of runs with a withdrawn draft answer",
            description=(
                "Draft answers withdrawn because they quoted numbers no tool result of the run gave "
                "(stacgis_answers_withdrawn_total) over finished runs: the model was then asked to look the "
                "numbers up or say what the data lacks. A rising share means the model guesses more: check the "
                "model and the prompt (make eval)."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(rate("stacgis_answers_withdrawn_total"), rate("stacgis_agent_runs_total"), "job"),
                    "withdrawn share",
                ),
            ),
            thresholds=rising(0.1, 0.3),
            min=0,
        ),
        PanelSpec(
            title="Answers whose data did not cover the question, by kind",
            description=(
                "Draft answers the premise check caught (stacgis_premise_gaps_total): variable and period, the "
                "question asked for a variable or years no collection holds and the user got a refusal naming "
                "it; place, the same for a place no collection of the variable reaches; call, a call asked a "
                "collection without the variable and was refused with the ones that hold it. Many of these mean "
                "users ask for data the catalogue lacks, or the model picks collections badly (make eval)."
            ),
            unit="ops",
            queries=(Query(f"sum by (kind) ({rate('stacgis_premise_gaps_total')})", "{{kind}}"),),
            thresholds=volume(1),
            stack=True,
        ),
        PanelSpec(
            title="Share of runs ending in error",
            description=(
                "Runs that ended with an error over all finished runs (stacgis_agent_runs_total). Above 2% users "
                "notice; check model errors and tool failures first."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(
                        rate("stacgis_agent_runs_total", 'outcome="error"'),
                        rate("stacgis_agent_runs_total"),
                        "job",
                    ),
                    "error share",
                ),
            ),
            thresholds=rising(0.02, 0.1),
            min=0,
        ),
    ),
)

DASHBOARD = DashboardSpec(
    uid="stacgis-agent-llm",
    title="stacgis / Agent and LLM",
    description="The agent loop and the LLM as the orchestrator's model client sees it.",
    file_name="stacgis-agent-llm.json",
    rows=(model, agent),
)
