"""`python -m stacgis_knowledge.migrate [--reembed]`: apply the schema (the chart's migration Job).

--reembed re-embeds every stored chunk with the configured model, after changing
KNOWLEDGE_EMBEDDING_MODEL or KNOWLEDGE_EMBEDDING_DIMENSION.
"""

from __future__ import annotations

from stacgis_common import migrate_cli
from stacgis_knowledge.settings import KnowledgeSettings
from stacgis_knowledge.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(KnowledgeSettings, EMBEDDINGS, __doc__)


if __name__ == "__main__":
    main()
