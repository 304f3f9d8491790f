"""Reciprocal rank fusion: combines rankings whose scores are not comparable (name tiers,
full-text rank, cosine distance) using only each item's position in each list. The hybrid
searches of vector-, knowledge- and memory-tools fuse their rankers with it."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class Fused(Generic[K]):
    key: K
    score: float = 0.0
    # Ranker name -> 1-based rank in that ranker's list.
    ranks: dict[str, int] = field(default_factory=dict)

    def result_fields(self, similarity: Mapping[K, float]) -> dict[str, Any]:
        """What a search result says about how it was found: fused `score`, the rankers that
        listed it (`matched_by`, best rank first) and, when the vector ranker saw it, its cosine
        `similarity` to the query."""
        fields: dict[str, Any] = {
            "score": round(self.score, 5),
            "matched_by": sorted(self.ranks, key=lambda ranker: self.ranks[ranker]),
        }
        if self.key in similarity:
            fields["similarity"] = round(similarity[self.key], 4)
        return fields


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[K]], k: int = 60) -> list[Fused[K]]:
    """score(d) = sum over rankers of 1 / (k + rank); k = 60 as in Cormack et al. (2009).

    Returned best first; ties keep the order of first appearance, so callers that need a
    tie-breaker (population) sort again with it.
    """
    fused: dict[K, Fused[K]] = {}
    for ranker, keys in rankings.items():
        for rank, key in enumerate(keys, start=1):
            entry = fused.setdefault(key, Fused(key))
            if ranker not in entry.ranks:
                entry.ranks[ranker] = rank
                entry.score += 1.0 / (k + rank)
    return sorted(fused.values(), key=lambda entry: -entry.score)
