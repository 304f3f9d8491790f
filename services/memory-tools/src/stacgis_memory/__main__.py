"""`python -m stacgis_memory`: run the memory-tools server on MEMORY_HOST:MEMORY_PORT."""

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings
from stacgis_memory.server import create_app
from stacgis_memory.settings import MemorySettings


def main() -> None:
    settings = load_settings(MemorySettings)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
