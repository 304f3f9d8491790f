"""Reciprocal rank fusion as the hybrid searches use it."""

import pytest

from stacgis_common.ranking import reciprocal_rank_fusion


def test_item_found_by_several_rankers_beats_a_single_first_place() -> None:
    fused = reciprocal_rank_fusion({"semantic": ["a", "b", "c"], "full_text": ["c", "b"]}, k=60)
    # c: 1/63 + 1/61, b: 1/62 + 1/62, a: 1/61 only.
    assert [entry.key for entry in fused] == ["c", "b", "a"]
    assert fused[0].ranks == {"semantic": 3, "full_text": 1}
    assert fused[1].score == pytest.approx(2 / 62)
    assert fused[2].ranks == {"semantic": 1}


def test_ties_keep_the_order_of_first_appearance_and_repeats_count_once() -> None:
    fused = reciprocal_rank_fusion({"name": ["x", "y", "x"], "full_text": ["y", "x"]})
    # x: 1/61 + 1/62, y: 1/62 + 1/61 -> equal scores, x appeared first; its repeat at rank 3 is ignored.
    assert [entry.key for entry in fused] == ["x", "y"]
    assert fused[0].ranks == {"name": 1, "full_text": 2}


def test_result_fields_say_how_an_item_was_found() -> None:
    fused = {entry.key: entry for entry in reciprocal_rank_fusion({"full_text": ["a", "b"], "semantic": ["b"]})}
    similarity = {"b": 0.812345}
    assert fused["b"].result_fields(similarity) == {
        "score": round(1 / 62 + 1 / 61, 5),
        "matched_by": ["semantic", "full_text"],
        "similarity": 0.8123,
    }
    # Not seen by the vector ranker: no similarity figure at all, rather than a made-up one.
    assert fused["a"].result_fields(similarity) == {"score": round(1 / 61, 5), "matched_by": ["full_text"]}
