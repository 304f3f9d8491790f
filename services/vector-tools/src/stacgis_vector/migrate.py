"""`python -m stacgis_vector.migrate [--reembed]`: apply the schema (the chart's migration Job).

--reembed re-embeds every stored feature with the configured model, after changing
VECTOR_EMBEDDING_MODEL or VECTOR_EMBEDDING_DIMENSION.
"""

from __future__ import annotations

from stacgis_common import migrate_cli
from stacgis_vector.settings import VectorSettings
from stacgis_vector.store import EMBEDDINGS


def main() -> None:
    migrate_cli.main(VectorSettings, EMBEDDINGS, __doc__)


if __name__ == "__main__":
    main()
