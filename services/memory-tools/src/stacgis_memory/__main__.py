"""`python -m stacgis_memory`: run the memory-tools server on MEMORY_HOST:MEMORY_PORT."""

from stacgis_common.mcp_app import serve
from stacgis_memory.server import app, settings


def main() -> None:
    serve(app, settings)


if __name__ == "__main__":
    main()
