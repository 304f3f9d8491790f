"""Tool argument checks: every refusal names the argument and what is allowed."""

import pickle
from typing import Any

import pytest

from stacgis_common.arguments import (
    ArgumentError,
    NotFoundError,
    bbox_argument,
    limit_argument,
    retry_hint,
    retry_with,
    still_loading,
    still_loading_of,
    text_argument,
)


@pytest.mark.parametrize("value", [None, "", "   ", 42, ["Berlin"]])
def test_text_must_be_a_non_blank_string(value: Any) -> None:
    with pytest.raises(ArgumentError) as refused:
        text_argument(value, "query", 10)
    assert str(refused.value) == "query: must be a non-empty string"
    assert refused.value.argument == "query"


def test_text_is_cleaned_before_its_length_is_checked() -> None:
    assert text_argument("  Berlin \n", "query", 6) == "Berlin"
    assert text_argument("I  like\tmaps", "content", 11, lambda text: " ".join(text.split())) == "I like maps"
    with pytest.raises(ArgumentError, match=r"^title: must be at most 5 characters \(got 6\)$"):
        text_argument(" Berlin ", "title", 5)


@pytest.mark.parametrize("value", [0, 51, -1, True, 2.0, "5", None])
def test_limit_is_an_integer_in_range(value: Any) -> None:
    with pytest.raises(ArgumentError, match=r"^limit: must be an integer from 1 to 50$"):
        limit_argument(value, 50)


def test_limit_in_range_passes() -> None:
    assert limit_argument(1, 50) == 1
    assert limit_argument(50, 50) == 50


@pytest.mark.parametrize("error", [ArgumentError("expression", "no variable 'x'"), NotFoundError("id", "no such id")])
def test_an_argument_error_survives_pickling(error: ArgumentError) -> None:
    """Read workers are processes: their errors come back pickled and must still name the argument."""
    back = pickle.loads(pickle.dumps(error))  # noqa: S301 - the test's own object, read back
    assert type(back) is type(error)
    assert (str(back), back.argument, back.detail) == (str(error), error.argument, error.detail)


def test_a_bbox_is_four_numbers_or_a_query_string_and_may_cross_the_antimeridian() -> None:
    assert bbox_argument([5, 49, 7, 51]) == (5.0, 49.0, 7.0, 51.0)
    assert bbox_argument(" 170.5,-20,-170, 10 ") == (170.5, -20.0, -170.0, 10.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,2,3", "must be west,south,east,north"),
        ("a,2,3,4", "must hold 4 finite numbers"),
        ("nan,2,3,4", "must hold 4 finite numbers"),
        ([1, 2, 3, float("inf")], "must hold 4 finite numbers"),
        ([True, 2, 3, 4], "must hold 4 finite numbers"),
        ({"west": 1}, "must be [west, south, east, north]"),
        ("-181,0,10,10", "longitudes between -180 and 180"),
        ("0,-91,10,10", "latitudes between -90 and 90"),
        ("0,10,10,5", "south (10.0) must not be greater than north (5.0)"),
    ],
)
def test_a_bad_bbox_is_refused_naming_the_argument(value: Any, message: str) -> None:
    with pytest.raises(ArgumentError) as refused:
        bbox_argument(value, "box")
    assert refused.value.argument == "box" and message in refused.value.detail


def test_the_one_retry_an_error_names_is_read_back_from_it() -> None:
    """A tool server writes `retry_with` into its error; the orchestrator reads it with `retry_hint`."""
    error = "point (-34.86, -8.0) is outside 'lux-dem'. " + retry_with("collection_id", "olinda-dem")
    assert retry_hint(error) == ("collection_id", "olinda-dem")
    assert retry_hint(f"query_raster_point: {error}") == ("collection_id", "olinda-dem"), "behind the tool's name"
    assert retry_hint(error + " " + retry_with("collection_id", "olinda-dem")) == ("collection_id", "olinda-dem")
    # None named, or two different ones: nothing to retry with.
    assert retry_hint("point (-34.86, -8.0) is outside 'lux-dem'; covering it: olinda-dem.") is None
    assert retry_hint(error + " " + retry_with("collection_id", "jacksboro-dem")) is None


def test_what_is_still_loading_is_read_back_from_an_error() -> None:
    """A tool server writes `still_loading` into its error; the orchestrator reads it with `still_loading_of`."""
    what = "the place names of cities (embedding 5,120 of 34,006)"
    error = f"resolve_place: place: no city is named 'Berlin'. Note: {still_loading(what)}"
    assert still_loading_of(error) == what
    assert still_loading_of("place: no city is named 'Berlin'; check the spelling") is None
