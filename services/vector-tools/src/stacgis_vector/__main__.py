"""`python -m stacgis_vector`: run the vector-tools server on VECTOR_HOST:VECTOR_PORT."""

from stacgis_common.mcp_app import serve
from stacgis_vector.server import app, settings


def main() -> None:
    serve(app, settings)


if __name__ == "__main__":
    main()
