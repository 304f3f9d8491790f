"""Split Markdown (or plain text) into chunks that follow its structure and fit the embedder.

Sections are cut at headings and keep their heading path ("NDVI > Reading the values"), so
each chunk says what it is about. A section longer than the token bound is packed paragraph
by paragraph; a paragraph longer than the bound, sentence by sentence; fenced code blocks,
lists and tables stay whole unless they alone exceed the bound.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
TOKEN = re.compile(r"\w+|[^\w\s]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
HEADING_SEPARATOR = " > "


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a lower bound on WordPiece tokens, cheap and model-free."""
    return len(TOKEN.findall(text))


@dataclass(frozen=True)
class Chunk:
    heading: str
    content: str
    tokens: int

    def embedding_text(self) -> str:
        return f"{self.heading}\n{self.content}" if self.heading else self.content

    def content_hash(self) -> str:
        return hashlib.sha256(self.embedding_text().encode()).hexdigest()


def normalize_content(text: str) -> str:
    """Line endings unified, trailing spaces and surrounding blank lines dropped (for hashing and storage)."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode()).hexdigest()


def first_heading(text: str) -> str | None:
    """The first level-1 heading outside code blocks (a Markdown file's title)."""
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := HEADING.match(line)) and len(match.group(1)) == 1:
            return match.group(2).strip()
    return None


def _sections(text: str) -> list[tuple[list[str], list[str]]]:
    """(heading path, body lines) per section, in order; '#' lines inside code fences are not headings."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def close() -> None:
        if any(line.strip() for line in body):
            sections.append(([title for _, title in path], body.copy()))
        body.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING.match(line)
        if match:
            close()
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, match.group(2).strip()))
        else:
            body.append(line)
    close()
    return sections


def _blocks(lines: list[str]) -> list[str]:
    """Paragraphs separated by blank lines; a fenced code block is one block, blank lines and all."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    for line in lines:
        if FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _split_long(block: str, budget: int) -> list[str]:
    """Pieces of one over-long block: whole sentences where possible, else runs of words."""
    pieces: list[str] = []
    current = ""
    for sentence in SENTENCE_END.split(block):
        if count_tokens(sentence) > budget:
            if current:
                pieces.append(current)
            run: list[str] = []
            for word in sentence.split():
                if run and count_tokens(" ".join([*run, word])) > budget:
                    pieces.append(" ".join(run))
                    run = []
                run.append(word)
            current = " ".join(run)
            continue
        candidate = f"{current} {sentence}".strip()
        if current and count_tokens(candidate) > budget:
            pieces.append(current)
            current = sentence
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def chunk_markdown(text: str, title: str, max_tokens: int) -> list[Chunk]:
    """Chunks of `text`, each with its heading path (starting with the text's first level-1 heading,
    else with `title`) and at most `max_tokens` tokens of heading plus content."""
    chunks: list[Chunk] = []
    text = normalize_content(text)
    # A document's own top heading names it better than the title it was filed under.
    top = first_heading(text) or title
    for path, lines in _sections(text):
        if not path or path[0] != top:
            path = [top, *path]
        heading = HEADING_SEPARATOR.join(path)
        budget = max(max_tokens - count_tokens(heading), max_tokens // 2)
        packed: list[list[str]] = [[]]
        for block in _blocks(lines):
            pieces = [block] if count_tokens(block) <= budget else _split_long(block, budget)
            for piece in pieces:
                if packed[-1] and count_tokens("\n\n".join([*packed[-1], piece])) > budget:
                    packed.append([])
                packed[-1].append(piece)
        for group in packed:
            if group:
                content = "\n\n".join(group)
                chunks.append(Chunk(heading, content, count_tokens(heading) + count_tokens(content)))
    return chunks
