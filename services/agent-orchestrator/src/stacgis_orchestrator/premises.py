"""Does the data an answer used cover what the question asked?

Grounding proves that every number of an answer came from a tool result; it cannot tell that the
result is about another variable (snowfall answered with an elevation model) or another period
(2010 answered with 1999's data). These checks compare the question with the raster catalogue
(`collections://list`: ids, titles, keywords, band names, time ranges, boxes) and with the calls
the model makes. They find four gaps:

- `variable`: the question asks for a variable no collection holds (a refusal, written here);
- `period`: it names years that no collection of the variable covers (a refusal, written here);
- `place`: a place it names that no collection of the variable reaches in those years (a refusal);
- `call`: a call asks a collection that holds none of the variables asked for, while others do (the
  call is not run; the model is told which collections hold them).

Variables are recognised from a vocabulary of common Earth-observation quantities; a question that
names none of them is not checked for its variable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from stacgis_common.answer import mentions, refusal_phrases

from .tools.scenes import CLOUD_LIMIT

# Quantities a user may ask for, each with the words that name it. A collection holds one when a
# word occurs in its id, title, keywords or band names. Longer words are matched first, so "sea
# surface temperature" is not also read as "temperature".
VARIABLES: dict[str, tuple[str, ...]] = {
    "elevation": ("elevation", "altitude", "terrain height", "height above sea level", "topography", "dem"),
    "precipitation": ("precipitation", "rainfall", "rain", "wetter", "wettest", "drier", "driest", "rainiest"),
    "air temperature": (
        *("air temperature", "temperature", "how warm", "how hot", "how cold"),
        *("warmer", "warmest", "colder", "coldest", "hotter", "hottest"),
    ),
    "sea surface temperature": ("sea surface temperature", "sst", "ocean temperature", "water temperature"),
    "land surface temperature": ("land surface temperature", "lst", "brightness temperature"),
    "thermal infrared": ("thermal band", "thermal infrared", "thermal"),
    "sea ice": ("sea ice", "ice concentration", "ice extent"),
    "snow": ("snowfall", "snow cover", "snow depth", "snow"),
    "wind": ("wind speed", "wind direction", "wind"),
    "humidity": ("relative humidity", "humidity", "dew point"),
    "soil moisture": ("soil moisture", "soil water"),
    "salinity": ("salinity",),
    "air quality": ("pm2.5", "pm10", "air quality", "air pollution", "particulate matter", "aerosol", "ozone"),
    "evapotranspiration": ("evapotranspiration", "evaporation"),
    "solar radiation": ("solar radiation", "irradiance", "sunshine"),
    "air pressure": ("air pressure", "atmospheric pressure", "sea level pressure"),
    "cloud cover": ("cloud cover", "cloudiness"),
    "population": ("population", "inhabitants"),
    "night lights": ("night lights", "nighttime lights"),
    "burned area": ("burned area", "burnt area", "wildfire", "fire"),
    "land cover": ("land cover", "landcover", "land use", "forest", "cropland"),
    "ndvi": ("ndvi", "vegetation index", "greenness"),
    "land mask": ("land mask", "water mask", "land or water", "land-sea mask"),
}
_TERMS = sorted(((term, name) for name, terms in VARIABLES.items() for term in terms), key=lambda t: -len(t[0]))
# A year the user wrote: not part of an identifier ("bcsd-precipitation-1999") and not a quantity
# ("2000 m"). "1999-07" is the year 1999.
_YEAR = re.compile(r"(?<![\w.\-−/])(1[89]\d\d|20\d\d|2100)(?![\w.]|\s?(?:m|mm|km|ft|metres|meters|%)\b)")
_YEAR_IN_RANGE = re.compile(r"(\d{4})-\d\d-\d\d")


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[-‐‑–_/,;:()]", " ", text.lower()).split())


@dataclass(frozen=True)
class Collection:
    id: str
    title: str
    variables: frozenset[str]  # of VARIABLES, those whose words occur in its id, title, keywords or bands
    years: tuple[int, int] | None  # first and last year of its data; None when not time-resolved
    bbox: tuple[float, float, float, float] | None = None  # west, south, east, north
    # Many items with one asset per band (or a data cube): read by the scene tools, not the others.
    scenes: bool = False
    # Variables only band math gives (NDVI from red and near infrared): held for calls with an expression.
    derived: frozenset[str] = frozenset()

    def reaches(self, box: tuple[float, float, float, float]) -> bool:
        """Whether its extent meets `box` (a point is a box of zero size); no extent: everywhere."""
        if self.bbox is None:
            return True
        w, s, e, n = self.bbox
        return box[0] <= e and w <= box[2] and box[1] <= n and s <= box[3]

    def holds(self, variable: str, band_math: bool = True) -> bool:
        """Whether a call of this kind can answer `variable` here. A scene collection answers band-math
        calls only: the single-file tools go to the single-file collection of the same data (the demo's
        tiles and cube repeat the monthly grids, and a small model mixes them up)."""
        if self.scenes and not band_math:
            return False
        return variable in self.variables or (band_math and variable in self.derived)

    def covers(self, year: int) -> bool:
        return self.years is None or self.years[0] <= year <= self.years[1]


class Catalog:
    """The raster collections, read from the `collections://list` resource."""

    def __init__(self, collections: Iterable[Collection] = ()) -> None:
        self.collections = {c.id: c for c in collections}

    @classmethod
    def from_resource(cls, text: str | None) -> Catalog:
        try:
            data: Any = json.loads(text or "")
        except ValueError:
            return cls()
        if isinstance(data, dict):
            data = data.get("collections")
        if not isinstance(data, list):
            return cls()
        return cls(_collection(item) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str))

    def holders(self, variable: str, band_math: bool = True) -> list[Collection]:
        return [c for c in self.collections.values() if c.holds(variable, band_math)]

    def variables(self) -> list[str]:
        """The vocabulary's variables that some collection holds, for telling the user what there is."""
        return [name for name in VARIABLES if self.holders(name)]


def _collection(item: dict[str, Any]) -> Collection:
    bands = item.get("band_names") or []
    keywords = item.get("keywords") or []
    words = _plain(" ".join(str(part) for part in [item["id"], item.get("title") or "", *keywords, *bands]))
    years = [int(y) for y in _YEAR_IN_RANGE.findall(str(item.get("time") or ""))]
    raw_box = item.get("bbox")
    box = None
    if isinstance(raw_box, list) and len(raw_box) == 4 and all(isinstance(v, (int, float)) for v in raw_box):
        box = (float(raw_box[0]), float(raw_box[1]), float(raw_box[2]), float(raw_box[3]))
    variables = {name for name, terms in VARIABLES.items() if any(_term_pattern(t).search(words) for t in terms)}
    names = {str(b).lower() for b in bands}
    derived = {"ndvi"} if "red" in names and names & {"nir", "nir08"} else set()
    return Collection(
        id=item["id"],
        title=str(item.get("title") or ""),
        variables=frozenset(variables),
        derived=frozenset(derived - variables),
        years=(min(years), max(years)) if years else None,
        bbox=box,
        scenes=item.get("kind") in ("scenes", "data cube"),
    )


def asked_variables(question: str) -> list[tuple[str, str]]:
    """The variables the question names, as (variable, the words used), in the order written. A
    capitalised word inside a sentence is part of a name ("Snow Hill", "Fire Island"), not a variable.
    A cloud-cover limit ("at most 2 % cloud cover") filters scenes; it asks for no cloud data."""
    lowered = CLOUD_LIMIT.sub(lambda m: " " * len(m.group(0)), question).lower()
    found: list[tuple[int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for term, name in _TERMS:
        for match in _term_pattern(term).finditer(lowered):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken) or _is_name(question, span[0]):
                continue
            taken.append(span)
            found.append((span[0], name, term))
    seen: dict[str, str] = {}
    for _, name, term in sorted(found):
        seen.setdefault(name, term)
    return list(seen.items())


_DATA_WORDS = re.compile(r"\b(?:layers?|collections?|datasets?|data|raster|imagery)\b", re.I)


def asks_for_data(question: str, catalog: Catalog) -> bool:
    """Whether the question asks for data (a variable, a collection by id, a layer), not only a place
    ("Show me Tokyo on the map")."""
    lowered = question.lower()
    return bool(asked_variables(question) or _DATA_WORDS.search(question)) or any(
        cid in lowered for cid in catalog.collections
    )


@cache
def _term_pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in re.split(r"[\s\-]+", term.lower())]
    # Not inside an identifier: "temperature" in "bcsd-temperature-1999" names a collection.
    return re.compile(r"(?<![\w.\-])" + r"[\s\-_/]+".join(words) + r"(?![\w\-])")


def _is_name(text: str, start: int) -> bool:
    word = re.match(r"\w+", text[start:])
    if word is None or not word.group(0).istitle() or len(word.group(0)) < 2:
        return False
    before = text[:start].rstrip()
    return bool(before) and before[-1] not in ".?!:\"'([\n"


def asked_years(question: str) -> list[int]:
    return sorted({int(y) for y in _YEAR.findall(question)})


@dataclass(frozen=True)
class Gap:
    kind: str  # "variable", "period" or "place"
    missing: str  # what the data lacks, in the user's words
    reason: str  # why the data cannot answer, as a clause

    @property
    def refusal(self) -> str:
        """What the user is told when the model did not say it."""
        return f"I cannot answer that from the data here: {self.reason}."

    @property
    def note(self) -> str:
        """What the model is told before it starts."""
        return (
            f"Catalogue check: {self.reason}. If my question asks for it, say so plainly instead of using other data."
        )

    def answered_by(self, draft: str) -> bool:
        """Whether a draft already says so: it refuses and names what is missing."""
        return bool(refusal_phrases(draft)) and mentions(draft, self.missing)


def catalogue_gaps(question: str, catalog: Catalog) -> list[Gap]:
    """What the catalogue as a whole cannot answer: a variable no collection holds, or years that
    no collection of the variable covers."""
    if not catalog.collections:
        return []
    gaps = []
    years = asked_years(question)
    for variable, words in asked_variables(question):
        holders = catalog.holders(variable)
        if not holders:
            held = ", ".join(catalog.variables()) or "none"
            gaps.append(
                Gap(
                    "variable",
                    words,
                    f"none of the catalogue's collections holds {words} data (they hold: {held})",
                )
            )
        elif years and not any(c.covers(y) for c in holders for y in years):
            gaps.append(_period_gap(variable, years, holders))
    return gaps


def _period_gap(variable: str, years: list[int], holders: list[Collection]) -> Gap:
    asked = " and ".join(str(y) for y in years)
    spans = "; ".join(f"{c.id} covers {_span(c)}" for c in holders)
    return Gap("period", str(years[0]), f"no {variable} data covers {asked} ({spans})")


def _span(collection: Collection) -> str:
    if collection.years is None:
        return "no particular period"
    first, last = collection.years
    return str(first) if first == last else f"{first} to {last}"


def place_gap(question: str, catalog: Catalog, name: str, box: tuple[float, float, float, float]) -> Gap | None:
    """A place the question names (at `box`; a point as a box of zero size) that no collection of
    the variable asked for reaches, in the years asked for."""
    years = asked_years(question)
    for variable, _ in asked_variables(question):
        holders = catalog.holders(variable)
        if not holders:
            continue  # the variable gap says it
        there = [c for c in holders if c.reaches(box)]
        if any(not years or any(c.covers(y) for y in years) for c in there):
            continue
        when = f" in {' and '.join(str(y) for y in years)}" if there else ""
        # Titles say where each collection is ("... south-eastern United States"); its box would put
        # numbers in the answer that no tool result gave.
        reach = "; ".join(f"{c.id}: {c.title}" for c in holders)
        return Gap("place", name, f"no {variable} data covers {name}{when} (the collections with {variable}: {reach})")
    return None


def call_gap(question: str, catalog: Catalog, collection_id: object, band_math: bool = False) -> str | None:
    """Why a call on `collection_id` cannot answer the question: the collection holds none of the
    variables asked for while others do. The call is then not run; the model gets this instead.
    `band_math`: the call computes an expression, so variables band math derives count."""
    collection = catalog.collections.get(collection_id) if isinstance(collection_id, str) else None
    if collection is None:
        return None
    asked = asked_variables(question)
    # Only collections the call's kind of tool reads: scene collections for band math (an
    # expression), the others for the single-file tools.
    holders = {c.id for variable, _ in asked for c in catalog.holders(variable, band_math) if c.scenes == band_math}
    if not asked or not holders or any(collection.holds(variable, band_math) for variable, _ in asked):
        return None
    words = " or ".join(variable for variable, _ in asked)
    return (
        f"collection_id: '{collection.id}' ({collection.title}) holds no {words} data; "
        f"collections with {words}: {', '.join(sorted(holders))}. Call the tool again with one of them."
    )


def sole_holder(
    question: str, catalog: Catalog, box: tuple[float, float, float, float] | None, scenes: bool = False
) -> Collection | None:
    """The one collection that holds a variable asked for, reaches `box` (the call's place; None:
    unknown, then every holder counts), covers the years asked for and is read by the call's kind of
    tool (`scenes`: a band-math call, read by the scene tools); None when there is not exactly one. A
    call on a collection without the variable is then run on it instead."""
    years = asked_years(question)
    fitting = {
        c.id: c
        for variable, _ in asked_variables(question)
        for c in catalog.holders(variable, band_math=scenes)
        if c.scenes == scenes and (box is None or c.reaches(box)) and (not years or any(c.covers(y) for y in years))
    }

    return next(iter(fitting.values())) if len(fitting) == 1 else None


def misses_years(question: str, catalog: Catalog, collection_id: object) -> bool:
    """Whether the collection covers none of the years the question asks for (a 2016 collection
    called for 1999)."""
    collection = catalog.collections.get(collection_id) if isinstance(collection_id, str) else None
    years = asked_years(question)
    return collection is not None and bool(years) and not any(collection.covers(y) for y in years)
