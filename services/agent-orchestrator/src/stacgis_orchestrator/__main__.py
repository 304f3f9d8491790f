"""`python -m stacgis_orchestrator`: serve the orchestrator on ORCHESTRATOR_HOST:ORCHESTRATOR_PORT."""

from __future__ import annotations

import uvicorn

from stacgis_common.settings import load_settings

from .app import create_app
from .settings import OrchestratorSettings


def main() -> None:
    settings = load_settings(OrchestratorSettings)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        proxy_headers=True,
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
