"""Hypothesis strategies for hostile MCP tool arguments, chosen from each tool's own input schema.

Every value here is something a confused model, a poisoned document or an attacker could put into
a tool call: numbers out of range, NaN and infinity (sent as the bare JSON tokens `NaN`/`Infinity`,
which Python's and pydantic's parsers accept), huge strings, deep JSON, invalid and enormous
GeoJSON, path and URL tricks in ids (pointing at a canary HTTP server that must never be called).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

Json = Any

HUGE_STRING_SIZES = (10_000, 200_000, 1_000_000)
# Nesting the server's JSON parser still accepts (it refuses beyond ~200 levels; wire tests cover that).
DEEP_LEVELS = (40, 120, 190)

EXTREME_NUMBERS: list[Json] = [
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -1e308,
    5e-324,
    -0.0,
    0,
    -1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**40,
    -(10**40),
]

SPECIAL_STRINGS: list[str] = [
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\u202eevil",
    "\ufeff",
    "🌍" * 50,
    "\ud800",  # a lone surrogate: valid JSON escape, not encodable as UTF-8 (Postgres refuses it)
    "'; DROP TABLE features; --",
    "' OR '1'='1",
    "%",
    "_%_",
    "\\",
    '"',
    "{{system}}",
    "{0.__class__}",
    "%s%s%s%n",
    "${jndi:ldap://127.0.0.1/x}",
    "<script>alert(1)</script>",
    ".*(",
    "(a+)+$",
    "NaN",
    "Infinity",
    "-1",
    "1e309",
    "null",
    "true",
    "[]",
    "{}",
]

DATE_TRICKS: list[str] = [
    "9999-99-99",
    "0000-00-00",
    "1999-13",
    "1999-02-30",
    "1999-01-01T25:61:61Z",
    "1999-01/",
    "/1999-01",
    "/",
    "..",
    "../..",
    "0001-01-01/9999-12-31",
    "1999-01/1998-01",
    "-999999-01-01",
    "+275760-09-13",
    "1999-01-01/1999-01-02/1999-01-03",
    "yesterday",
    "1" * 400,
]


def path_and_url_tricks(canary_url: str) -> list[str]:
    """Ids that try to escape into the file system, GDAL's virtual file systems or the network."""
    return [
        "../../../../etc/passwd",
        "..\\..\\..\\windows\\win.ini",
        "/etc/passwd",
        "file:///etc/passwd",
        "..%2f..%2f..%2fetc%2fpasswd",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "....//....//etc/passwd",
        "/proc/self/environ",
        "/vsizip//etc/passwd",
        "/vsicurl/" + canary_url + "/vsicurl.tif",
        "/vsis3/bucket/key.tif",
        canary_url + "/id",
        canary_url.replace("http://", "https://") + "/id",
        canary_url.replace("127.0.0.1", "localhost") + "/id",
        "http://169.254.169.254/latest/meta-data/",
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "s3://bucket/key",
        "\\\\127.0.0.1\\share\\x",
        "luxembourg-dem/../../../../etc/passwd",
        "luxembourg-dem%00.tif",
        "countries/../../mcp",
        "?x=1#frag",
        "a" * 5000,
    ]


def huge_strings() -> st.SearchStrategy[str]:
    return st.builds(lambda size, char: char * size, st.sampled_from(HUGE_STRING_SIZES), st.sampled_from("A9é🌍 "))


def hostile_strings(canary_url: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SPECIAL_STRINGS),
        st.sampled_from(path_and_url_tricks(canary_url)),
        st.sampled_from(DATE_TRICKS),
        huge_strings(),
        st.text(max_size=60),
    )


def hostile_numbers() -> st.SearchStrategy[Json]:
    return st.one_of(
        st.sampled_from(EXTREME_NUMBERS),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
    )


def json_scalars() -> st.SearchStrategy[Json]:
    return st.one_of(st.none(), st.booleans(), hostile_numbers(), st.text(max_size=30))


def json_values() -> st.SearchStrategy[Json]:
    return st.recursive(
        json_scalars(),
        lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)),
        max_leaves=25,
    )


def nested(depth: int, kind: str) -> Json:
    value: Json = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def deep_json() -> st.SearchStrategy[Json]:
    return st.builds(nested, st.sampled_from(DEEP_LEVELS), st.sampled_from(["list", "dict"]))


def ring(vertices: int, lon: float = 6.1, lat: float = 49.7, radius: float = 0.2) -> list[list[float]]:
    points = [
        [lon + radius * math.cos(2 * math.pi * i / vertices), lat + radius * math.sin(2 * math.pi * i / vertices)]
        for i in range(vertices)
    ]
    return [*points, points[0]]


def enormous_polygon(vertices: int) -> Json:
    return {"type": "Polygon", "coordinates": [ring(vertices)]}


def many_parts(parts: int) -> Json:
    return {
        "type": "MultiPolygon",
        "coordinates": [[ring(4, 6.0 + (i % 100) * 0.004, 49.5 + (i // 100) * 0.004, 0.001)] for i in range(parts)],
    }


def invalid_geojson(canary_url: str) -> list[Json]:
    square = [[5.9, 49.5], [6.4, 49.5], [6.4, 50.0], [5.9, 50.0], [5.9, 49.5]]
    return [
        {},
        {"type": "Polygon"},
        {"type": "Polygon", "coordinates": []},
        {"type": "Polygon", "coordinates": [[]]},
        {"type": "Polygon", "coordinates": [[[6, 49], [7, 50]]]},
        {"type": "Polygon", "coordinates": [square[:-1]]},  # ring not closed
        {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]},  # bow tie
        {"type": "Polygon", "coordinates": [[[math.nan, 49], [6, math.inf], [6, 50], [math.nan, 49]]]},
        {"type": "Polygon", "coordinates": [[[1000, 1000], [2000, 1000], [2000, 2000], [1000, 1000]]]},
        {"type": "Polygon", "coordinates": [[["a", "b"], ["c", "d"], ["e", "f"], ["a", "b"]]]},
        {"type": "Polygon", "coordinates": "not coordinates"},
        {"type": "Polygon", "coordinates": [[[6, 49, 1, 2, 3, 4], [7, 49], [7, 50], [6, 49, 1, 2, 3, 4]]]},
        {"type": "Polygon", "coordinates": [[[0, 0], [0, 0], [0, 0], [0, 0]]]},  # zero area
        {"type": "Polygon", "coordinates": [[[-180, -90], [180, -90], [180, 90], [-180, 90], [-180, -90]]]},
        {"type": "Point", "coordinates": [6.1, 49.6]},
        {"type": "LineString", "coordinates": [[6, 49], [7, 50]]},
        {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [6, 49]}]},
        {"type": "Feature", "geometry": None, "properties": {}},
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [square]}, "properties": None},
        {"type": "FeatureCollection", "features": []},
        {"type": "Sphere"},
        {"type": None, "coordinates": None},
        {"dataset": "../../../etc", "id": "passwd"},
        {"dataset": "countries", "id": "../../../../etc/passwd"},
        {"dataset": canary_url, "id": "x"},
        {"dataset": "countries", "id": canary_url + "/feature"},
        {"dataset": "", "id": ""},
        {"dataset": ["countries"], "id": {"$ne": None}},
        "POLYGON((5.9 49.5, 6.4 49.5, 6.4 50, 5.9 49.5))",
        "{not json",
        '{"type": "Polygon", "coordinates": [[[0, 0]]]}',
        "countries/DEU",
    ]


def geojson_values(canary_url: str) -> st.SearchStrategy[Json]:
    return st.one_of(
        st.sampled_from(invalid_geojson(canary_url)),
        st.builds(enormous_polygon, st.sampled_from([5_000, 50_000, 250_000])),
        st.builds(many_parts, st.sampled_from([500, 5_000])),
        st.builds(
            lambda coordinates: {"type": "Polygon", "coordinates": [coordinates]},
            st.lists(st.lists(hostile_numbers(), min_size=0, max_size=3), max_size=8),
        ),
    )


def bbox_values() -> st.SearchStrategy[Json]:
    return st.one_of(
        st.lists(hostile_numbers(), min_size=0, max_size=6),
        st.sampled_from(
            [
                [6.4, 49.5, 5.9, 50.0],  # west > east (or crossing the antimeridian)
                [5.9, 50.0, 6.4, 49.5],  # south > north
                [-180, -90, 180, 90],
                [-1000, -1000, 1000, 1000],
                [6, 49, 6, 49],
                "5.9,49.5,6.4,50",
                "1,2,3",
                "a,b,c,d",
                "NaN,NaN,NaN,NaN",
                [[5.9, 49.5], [6.4, 50.0]],
                {"west": 5.9},
            ]
        ),
    )


def schema_types(schema: dict[str, Any]) -> set[str]:
    """Types a property schema allows (through anyOf/oneOf too); empty when it does not say."""
    types: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types.update(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            if isinstance(branch, dict):
                types |= schema_types(branch)
    if "enum" in schema and not types:
        types.add("string")
    return types


def hostile_for(name: str, schema: dict[str, Any], canary_url: str) -> st.SearchStrategy[Json]:
    """Hostile values for one argument: mostly of its own kind, sometimes of any kind at all."""
    types = schema_types(schema)
    lowered = name.lower()
    own: list[st.SearchStrategy[Json]] = []
    if "geometry" in lowered or "geojson" in lowered or ("feature" in lowered and "object" in types):
        own.append(geojson_values(canary_url))
    if "bbox" in lowered:
        own.append(bbox_values())
    if any(part in lowered for part in ("date", "start", "end", "period", "time", "since")):
        own.append(st.sampled_from(DATE_TRICKS))
    if lowered.endswith(("id", "ids", "dataset", "ref", "url", "uri", "path", "name", "collection")):
        own.append(st.sampled_from(path_and_url_tricks(canary_url)))
    if types & {"number", "integer"}:
        own.append(hostile_numbers())
    if "string" in types:
        own.append(hostile_strings(canary_url))
    if "array" in types:
        own.append(
            st.one_of(
                st.just([]),
                st.lists(json_scalars(), max_size=20),
                st.builds(lambda n, v: [v] * n, st.sampled_from([1_000, 100_000]), st.sampled_from([0, "x", None])),
                st.lists(st.sampled_from(path_and_url_tricks(canary_url)), min_size=1, max_size=30),
            )
        )
    if "object" in types:
        own.append(st.one_of(st.dictionaries(st.text(max_size=20), json_values(), max_size=8), deep_json()))
    if "boolean" in types:
        own.append(st.sampled_from([0, 1, "true", "yes", None, [], {}]))
    anything = st.one_of(json_values(), deep_json(), hostile_strings(canary_url), hostile_numbers())
    if not own:
        return anything
    return st.one_of(st.one_of(*own), st.one_of(*own), st.one_of(*own), anything)


def plausible_value(schema: dict[str, Any]) -> Json:
    """A harmless value of a property's own type, for tools without a known good call."""
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(branch, dict) and branch.get("type") != "null":
            return plausible_value(branch)
    kind = schema.get("type")
    if kind == "string":
        return "x" * max(1, int(schema.get("minLength", 1)))
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return low + 1 if "exclusiveMinimum" in schema else max(low, 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return None
