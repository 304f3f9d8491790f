"""`python -m stacgis_gateway`: serve the chat gateway on GATEWAY_HOST:GATEWAY_PORT."""

from __future__ import annotations

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings

from .app import create_app
from .config import GatewaySettings


def main() -> None:
    settings = load_settings(GatewaySettings)
    serve(
        create_app(settings),
        settings,
        # The peer address must stay the real one: trusted-header mode decides on it.
        proxy_headers=False,
        # httptools' C parser: h11's pure-Python one cost more per streamed chunk than the rest of a send.
        http="httptools",
        graceful_seconds=5,
    )


if __name__ == "__main__":
    main()
