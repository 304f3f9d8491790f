"""`python -m stacgis_knowledge.ingest DIRECTORY [--prune]`: load Markdown and text files.

Each file becomes one document whose source is its path under the directory (e.g.
`knowledge/concepts/ndvi.md`) and whose tags are its sub-folders. Idempotent: unchanged files
are skipped, changed ones replaced; --prune removes documents ingested from the same folder
name whose file is gone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from stacgis_common.embeddings import EmbeddingError
from stacgis_common.pgvector import EmbeddingMismatch
from stacgis_common.pgvector_runtime import connect
from stacgis_common.settings import load_settings
from stacgis_knowledge import store
from stacgis_knowledge.chunking import first_heading
from stacgis_knowledge.service import KnowledgeService
from stacgis_knowledge.settings import KnowledgeSettings

SUFFIXES = {".md", ".markdown", ".txt"}


def documents(directory: Path) -> list[tuple[Path, str]]:
    """(file, source) of every document under `directory`, in a stable order."""
    files = sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix.lower() in SUFFIXES)
    return [(path, f"{directory.resolve().name}/{path.relative_to(directory).as_posix()}") for path in files]


async def run(directory: Path, prune: bool) -> int:
    settings = load_settings(KnowledgeSettings)
    counts: dict[str, int] = {}
    try:
        async with connect(settings, store.EMBEDDINGS) as (pool, embedder):
            service = KnowledgeService(settings, pool, embedder)
            found = documents(directory)
            for path, source in found:
                text = path.read_text(encoding="utf-8")
                if not text.strip():
                    continue
                title = first_heading(text) or path.stem.replace("-", " ").replace("_", " ").capitalize()
                tags = [part.lower() for part in path.relative_to(directory).parts[:-1]]
                outcome = await service.ingest(title, text, source, tags)
                counts[outcome.status] = counts.get(outcome.status, 0) + 1
                if outcome.status in ("added", "replaced"):
                    print(f"{source}: {outcome.status}, {outcome.chunks} chunks", flush=True)
                elif outcome.status == "duplicate":
                    print(f"{source}: same content already stored as document {outcome.document_id}", flush=True)
            if prune:
                prefix = f"{found[0][1].split('/', 1)[0]}/" if found else f"{directory.name}/"
                for source in await service.prune(prefix, {source for _, source in found}):
                    print(f"{source}: removed (file no longer exists)", flush=True)
            summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "no documents"
            print(f"ingested {directory}: {summary}", flush=True)
    except (EmbeddingError, EmbeddingMismatch, UnicodeDecodeError) as error:
        print(f"ingest failed: {error}", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stacgis_knowledge.ingest", description=__doc__)
    parser.add_argument("directory", type=Path, help="folder of .md / .txt files (e.g. knowledge/)")
    parser.add_argument("--prune", action="store_true", help="remove documents whose file no longer exists")
    arguments = parser.parse_args()
    if not arguments.directory.is_dir():
        parser.error(f"{arguments.directory} is not a directory")
    sys.exit(asyncio.run(run(arguments.directory, arguments.prune)))


if __name__ == "__main__":
    main()
