"""Run raster-tools: python -m stacgis_raster"""

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings
from stacgis_raster.app import create_app
from stacgis_raster.settings import RasterSettings


def main() -> None:
    settings = load_settings(RasterSettings)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
