"""Place resolution: a name, an alternate name, an ISO code or a "<dataset>/<id>" reference to the one
feature it means, or the candidates when it could mean several, or a clear "unknown" with no guess.

Order: a feature reference; exact names; exact alternate names (GeoNames and Natural Earth names in
many languages, ISO codes, US state codes; a code that is both a country's and a US state's, "CA", is
ambiguous); "Name, Qualifier" with the qualifier matching the country, state or kind. Among several
matches the dataset order decides first (a country over a US state over a
city over a county: "Luxembourg" is the country, not its capital), then population: the most populous
wins only when it is at least DOMINANCE times the next ("Paris" is the French capital, not Paris, Texas;
"Springfield" stays ambiguous). Names that match nothing get the hybrid search's nearest names as
suggestions in the error, never as an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import asyncpg

from stacgis_common.arguments import ArgumentError, NotFoundError
from stacgis_vector import store
from stacgis_vector.geometry import bounds_list
from stacgis_vector.names import normalize_name

DATASET_ORDER = ("countries", "us-states", "cities", "us-counties")
# Datasets whose features carry short official codes (ISO 3166 for countries, USPS for states).
CODED_DATASETS = ("countries", "us-states")
CODE_LENGTH = 3
DOMINANCE = 10
MAX_MATCHES = 200
MAX_CANDIDATES = 8


class PlaceNotFound(NotFoundError):
    """No feature has this name; `suggestions` are near names, for the caller to choose from or not."""

    def __init__(self, argument: str, message: str, suggestions: list[dict[str, Any]]) -> None:
        super().__init__(argument, message)
        self.suggestions = suggestions


class AmbiguousPlace(ArgumentError):
    def __init__(self, argument: str, message: str, candidates: list[dict[str, Any]]) -> None:
        super().__init__(argument, message)
        self.candidates = candidates


@dataclass(frozen=True)
class Resolved:
    place: dict[str, Any]  # name, kind, dataset, id, ref, country, point or bbox, matched_by
    row: asyncpg.Record


def _kind(row: asyncpg.Record, properties: dict[str, Any]) -> str:
    dataset = row["dataset"]
    if dataset == "countries":
        return "country" if properties.get("type") in ("Sovereign country", "Country") else "territory"
    if dataset == "cities":
        return "city"
    if dataset == "us-states":
        return str(properties.get("kind") or "state")
    if dataset == "us-counties":
        return "county"
    return "feature"


def _country(row: asyncpg.Record, properties: dict[str, Any]) -> str | None:
    dataset = row["dataset"]
    if dataset == "cities":
        return str(properties.get("country") or properties.get("country_code") or "") or None
    if dataset == "us-states":
        return "United States"
    if dataset == "us-counties":
        return f"{properties.get('state')}, United States" if properties.get("state") else "United States"
    if dataset == "countries" and properties.get("sovereignt") not in (None, row["name"]):
        return str(properties["sovereignt"])
    return None


def describe(row: asyncpg.Record, matched_by: str) -> dict[str, Any]:
    """What a place is, without its geometry: enough to cite it and to choose among candidates."""
    properties = json.loads(row["properties"])
    out: dict[str, Any] = {
        "name": row["name"],
        "kind": _kind(row, properties),
        "dataset": row["dataset"],
        "id": row["id"],
        "ref": f"{row['dataset']}/{row['id']}",
    }
    country = _country(row, properties)
    if country:
        out["country"] = country
    if row["geometry_type"] == "Point":
        out["point"] = [round(float(row["anchor_lon"]), 5), round(float(row["anchor_lat"]), 5)]
    else:
        out["bbox"] = [round(float(value), 5) for value in bounds_list(row["bbox"])]
    if row["population"]:
        out["population"] = int(row["population"])
    out["matched_by"] = matched_by
    return out


def _qualifies(row: asyncpg.Record, qualifier: str, state_codes: set[str]) -> bool:
    """Whether "Name, <qualifier>" fits the row: its country, country code, state, state code or kind.
    `state_codes` are the codes of the US states named `qualifier`: a city carries only its state's
    code ("TN"), people write its name ("Knoxville, Tennessee")."""
    properties = json.loads(row["properties"])
    values = [
        properties.get(key)
        for key in ("country", "country_code", "state", "state_code", "iso_a2", "iso_a3", "continent")
    ]
    values += [_kind(row, properties), _country(row, properties), row["dataset"]]
    if row["dataset"] in ("us-states", "us-counties"):
        values += ["United States", "USA", "US"]
    admin1 = properties.get("admin1_code")
    if properties.get("country_code") == "US" and isinstance(admin1, str):
        values.append(admin1)
        if normalize_name(admin1) in state_codes:
            return True
    return any(isinstance(value, str) and normalize_name(value) == qualifier for value in values)


async def _state_codes(pool: asyncpg.Pool, qualifier: str) -> set[str]:
    rows = await store.name_matches(pool, qualifier, "us-states", MAX_MATCHES)
    codes = (json.loads(row["properties"]).get("state_code") for row in rows)
    return {normalize_name(code) for code in codes if isinstance(code, str)}


def _choose(rows: list[asyncpg.Record]) -> tuple[asyncpg.Record | None, list[asyncpg.Record]]:
    """The one row meant (or None) and the rows it was chosen among."""
    for dataset in DATASET_ORDER:
        group = [row for row in rows if row["dataset"] == dataset]
        if group:
            break
    else:
        group = rows
    if len(group) == 1:
        return group[0], group
    group.sort(key=lambda row: -(row["population"] or 0))
    first, second = group[0]["population"] or 0, group[1]["population"] or 0
    if first > 0 and first >= DOMINANCE * second:
        return group[0], group
    return None, group


async def _split_reference(pool: asyncpg.Pool, text: str) -> asyncpg.Record | None:
    if "/" not in text:
        return None
    dataset, _, feature_id = text.partition("/")
    if dataset.strip() not in await store.dataset_ids(pool):
        return None
    row = await store.feature(pool, dataset.strip(), feature_id.strip())
    if row is None:
        raise PlaceNotFound("place", f"dataset {dataset.strip()!r} has no feature {feature_id.strip()!r}", [])
    return row


async def resolve(pool: asyncpg.Pool, text: str, dataset: str | None, argument: str = "place") -> Resolved:
    """The feature `text` means; AmbiguousPlace or PlaceNotFound (both ArgumentErrors) otherwise."""
    reference = await _split_reference(pool, text)
    if reference is not None:
        return Resolved(describe(reference, "reference"), reference)
    normalized = normalize_name(text)
    rows = list(await store.name_matches(pool, normalized, dataset, MAX_MATCHES))
    qualifier = None
    if not rows and "," in normalized:
        name, _, rest = normalized.partition(",")
        qualifier = rest.strip()
        matches = await store.name_matches(pool, name.strip(), dataset, MAX_MATCHES)
        state_codes = await _state_codes(pool, qualifier)
        rows = [row for row in matches if _qualifies(row, qualifier, state_codes)]
    for tier, label in ((store.NAME_TIER, "name"), (store.ALTERNATE_NAME_TIER, "alternate name")):
        tiered = [row for row in rows if row["tier"] == tier]
        if not tiered:
            continue
        matched_by = f"{label} and qualifier" if qualifier else label
        chosen, group = _choose(tiered)
        if tier == store.ALTERNATE_NAME_TIER and len(normalized) <= CODE_LENGTH:
            # "CA", "DE", "GA": a country's ISO code and a US state's postal code; neither is a safe guess.
            by_dataset = [[row for row in tiered if row["dataset"] == ds] for ds in CODED_DATASETS]
            if all(by_dataset):
                chosen, group = None, [max(rows, key=lambda row: row["population"] or 0) for rows in by_dataset]
        if chosen is not None:
            resolved = describe(chosen, matched_by)
            others = [row for row in rows if row is not chosen]
            if others:
                resolved["other_matches"] = len(others)
            return Resolved(resolved, chosen)
        candidates = [describe(row, matched_by) for row in group[:MAX_CANDIDATES]]
        listed = "; ".join(
            f"{c['name']} ({c['kind']}{', ' + c['country'] if 'country' in c else ''}): {c['ref']}" for c in candidates
        )
        raise AmbiguousPlace(
            argument,
            f"{text!r} names {len(group)} places: {listed}. Pass the ref of the one meant as place "
            f"(e.g. {candidates[0]['ref']!r}) or add the country, e.g. '{candidates[0]['name']}, "
            f"{candidates[0].get('country') or candidates[0]['kind']}'.",
            candidates,
        )
    raise PlaceNotFound(
        argument,
        f"no country, city, US state or county is named {text!r} (names, alternate names and ISO codes "
        "were searched); check the spelling or name a larger place",
        [],
    )
