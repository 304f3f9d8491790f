"""`python -m stacgis_vector`: run the vector-tools server on VECTOR_HOST:VECTOR_PORT."""

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings
from stacgis_vector.server import create_app
from stacgis_vector.settings import VectorSettings


def main() -> None:
    settings = load_settings(VectorSettings)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
