"""A model caught in a loop: the same passage again and again until the token budget runs out.

Greedy decoding on a small model sometimes falls into a cycle ("The mean is 12 mm. The mean is
12 mm. ..."): 2,048 tokens, minutes of CPU, and an answer full of copies. The stream is watched and
stopped once its end is one passage repeated several times; the answer keeps the first copy.
"""

from __future__ import annotations

MIN_PERIOD = 12  # shorter cycles are ordinary text ("| --- | --- |", "...")
MAX_PERIOD = 400
MIN_SPAN = 150  # characters the repeated tail must cover, and at least three copies
CHECK_EVERY = 24  # characters between checks


def _periodic_tail(text: str) -> tuple[int, int] | None:
    """(start, period) of the longest stretch at the end of `text` that repeats one passage, when it
    covers three copies and MIN_SPAN characters; None otherwise."""
    size = len(text)
    for period in range(MIN_PERIOD, min(MAX_PERIOD, size // 3) + 1):
        if text[size - period :] != text[size - 2 * period : size - period]:
            continue
        start = size - period
        while start > 0 and text[start - 1] == text[start - 1 + period]:
            start -= 1
        if size - start >= max(3 * period, MIN_SPAN):
            return start, period
    return None


def without_repetition(text: str) -> str:
    """`text` up to the end of the first copy of a passage it repeats at its end (unchanged if none)."""
    found = _periodic_tail(text)
    if found is None:
        return text
    start, period = found
    return text[: start + period].rstrip()


class RepetitionGuard:
    """Fed the answer as it streams; `feed` turns True once the text ends in a loop."""

    def __init__(self) -> None:
        self.text = ""
        self._checked = 0
        self.tripped = False

    def feed(self, delta: str) -> bool:
        self.text += delta
        if len(self.text) - self._checked >= CHECK_EVERY:
            self._checked = len(self.text)
            self.tripped = _periodic_tail(self.text) is not None
        return self.tripped
