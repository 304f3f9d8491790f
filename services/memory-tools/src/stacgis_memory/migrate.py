"""`python -m stacgis_memory.migrate [--reembed]`: apply the schema (the chart's migration Job).

--reembed re-embeds every stored memory with the configured model, after changing
MEMORY_EMBEDDING_MODEL or MEMORY_EMBEDDING_DIMENSION.
"""

from __future__ import annotations

from stacgis_common import migrate_cli
from stacgis_memory.settings import MemorySettings
from stacgis_memory.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(MemorySettings, EMBEDDINGS, __doc__)


if __name__ == "__main__":
    main()
