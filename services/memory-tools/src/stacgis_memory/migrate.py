"""`python -m stacgis_memory.migrate [--reembed]`: see `stacgis_common.migrate_cli`."""

from stacgis_common import migrate_cli
from stacgis_memory.settings import MemorySettings
from stacgis_memory.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(MemorySettings, EMBEDDINGS)


if __name__ == "__main__":
    main()
