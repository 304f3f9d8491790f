"""Place-name normalisation shared by the loader and the search, so both sides compare alike.

The embedded Postgres has no `unaccent` extension, so names are folded here: Unicode
compatibility decomposition, combining marks dropped, case folded (ß -> ss), spaces collapsed.
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


# Accents are dropped only from Latin, Greek and Cyrillic letters; in other scripts
# (Devanagari vowel signs, Japanese voicing marks) the combining marks are part of the letter.
_ACCENTED_SCRIPTS_END = 0x0530


def normalize_name(text: str) -> str:
    kept: list[str] = []
    base = ""
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            if base and ord(base) < _ACCENTED_SCRIPTS_END:
                continue
        else:
            base = char
        kept.append(char)
    folded = unicodedata.normalize("NFKC", "".join(kept)).casefold()
    return _SPACES.sub(" ", folded).strip()


def words(text: str) -> list[str]:
    """Normalised words of `text`, in order, without duplicates."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(normalize_name(text)):
        seen.setdefault(word, None)
    return list(seen)


def or_tsquery(text: str, max_words: int = 16) -> str | None:
    """A `to_tsquery('simple', ...)` expression matching any word of `text`.

    Any-word matching (ranked by how many words hit) suits place names, where a
    query like "Paris France" should still rank the French capital first.
    Words are \\w+ runs, so no tsquery operator can get through.
    """
    found = words(text)[:max_words]
    return " | ".join(found) if found else None


def like_prefix(text: str) -> str:
    """A LIKE pattern matching strings that start with `text` literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
