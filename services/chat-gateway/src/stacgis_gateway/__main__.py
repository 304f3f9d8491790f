"""`python -m stacgis_gateway`: serve the chat gateway on GATEWAY_HOST:GATEWAY_PORT."""

from __future__ import annotations

import uvicorn

from stacgis_common.settings import load_settings

from .app import create_app
from .config import GatewaySettings


def main() -> None:
    settings = load_settings(GatewaySettings)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        # The peer address must stay the real one: trusted-header mode decides on it.
        proxy_headers=False,
        # httptools' C parser: h11's pure-Python one cost more per streamed chunk than the rest of a send.
        http="httptools",
        timeout_graceful_shutdown=5,
    )


if __name__ == "__main__":
    main()
