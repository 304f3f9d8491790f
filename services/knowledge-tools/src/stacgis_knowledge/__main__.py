"""`python -m stacgis_knowledge`: run the knowledge-tools server on KNOWLEDGE_HOST:KNOWLEDGE_PORT."""

from stacgis_common.http_app import serve
from stacgis_common.settings import load_settings
from stacgis_knowledge.server import create_app
from stacgis_knowledge.settings import KnowledgeSettings


def main() -> None:
    settings = load_settings(KnowledgeSettings)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
