"""`python -m stacgis_vector.migrate [--reembed]`: see `stacgis_common.migrate_cli`."""

from stacgis_common import migrate_cli
from stacgis_vector.settings import VectorSettings
from stacgis_vector.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(VectorSettings, EMBEDDINGS)


if __name__ == "__main__":
    main()
