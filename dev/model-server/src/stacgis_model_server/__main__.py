"""`python -m stacgis_model_server [--backend auto|scripted|all] [--port N] [--rules PATH]`."""

from __future__ import annotations

import argparse
import os

import uvicorn

from stacgis_common.logs import configure_logging
from stacgis_common.settings import load_settings

from .app import create_app
from .settings import ModelServerSettings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m stacgis_model_server", description=__doc__)
    parser.add_argument("--backend", choices=["auto", "scripted", "all"], help="overrides MODEL_SERVER_BACKEND")
    parser.add_argument("--host", help="overrides MODEL_SERVER_HOST")
    parser.add_argument("--port", type=int, help="overrides MODEL_SERVER_PORT")
    parser.add_argument("--rules", help="rules file of the scripted back end; overrides MODEL_SERVER_RULES_PATH")
    args = parser.parse_args(argv)
    # Flags win over the environment by becoming the environment the settings read.
    for flag, variable in (("backend", "BACKEND"), ("host", "HOST"), ("port", "PORT"), ("rules", "RULES_PATH")):
        value = getattr(args, flag)
        if value is not None:
            os.environ[f"MODEL_SERVER_{variable}"] = str(value)

    # Idle OpenMP threads of llama.cpp and torch would otherwise spin on the shared cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    settings = load_settings(ModelServerSettings)
    configure_logging("model-server", settings.log_level)
    app = create_app(settings)
    # Streams that a rule stalls on purpose must not hold a shutdown for long.
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
