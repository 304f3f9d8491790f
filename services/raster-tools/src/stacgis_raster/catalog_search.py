"""Keyword search over the catalog's collections (`search_raster_collections`)."""

from __future__ import annotations

import difflib
import re

from stacgis_raster.records import CollectionRecord

_WORD = re.compile(r"[a-z0-9]+")


def search_records(records: list[CollectionRecord], query: str, limit: int) -> list[tuple[float, CollectionRecord]]:
    """The collections matching `query`, best first (ties by id), with their relevance."""
    words = set(_WORD.findall(query.lower()))
    scored = []
    for record in records:
        score = _relevance(record, query.lower(), words)
        if score > 0:
            scored.append((score, record))
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return scored[:limit]


def _relevance(record: CollectionRecord, query: str, words: set[str]) -> float:
    """Keyword relevance: whole-query hits, word hits in id/title/keywords/description, fuzzy id."""
    score = 0.0
    title = record.title.lower()
    keywords = " ".join(record.keywords).lower()
    description = record.description.lower()
    if query in record.id or query in title or query in keywords:
        score += 3
    title_words = set(_WORD.findall(f"{record.id} {title}"))
    keyword_words = set(_WORD.findall(keywords))
    description_words = set(_WORD.findall(description))
    for word in words:
        if len(word) < 2:
            continue
        stem = word.rstrip("s") if len(word) > 3 else word
        if word in title_words or stem in title_words:
            score += 2
        elif word in keyword_words or stem in keyword_words:
            score += 1.5
        elif word in description_words or stem in description_words:
            score += 0.5
        elif any(difflib.SequenceMatcher(None, word, k).ratio() > 0.85 for k in title_words | keyword_words):
            score += 0.75
    return score
