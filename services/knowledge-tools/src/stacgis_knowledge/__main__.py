"""`python -m stacgis_knowledge`: run the knowledge-tools server on KNOWLEDGE_HOST:KNOWLEDGE_PORT."""

from stacgis_common.mcp_app import serve
from stacgis_knowledge.server import app, settings


def main() -> None:
    serve(app, settings)


if __name__ == "__main__":
    main()
