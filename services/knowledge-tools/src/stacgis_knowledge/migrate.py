"""`python -m stacgis_knowledge.migrate [--reembed]`: see `stacgis_common.migrate_cli`."""

from stacgis_common import migrate_cli
from stacgis_knowledge.settings import KnowledgeSettings
from stacgis_knowledge.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(KnowledgeSettings, EMBEDDINGS)


if __name__ == "__main__":
    main()
