"""`python -m stacgis_orchestrator`: serve the orchestrator on ORCHESTRATOR_HOST:ORCHESTRATOR_PORT."""

from __future__ import annotations

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings

from .app import create_app
from .settings import OrchestratorSettings


def main() -> None:
    settings = load_settings(OrchestratorSettings)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
