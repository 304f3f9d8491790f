"""The operations behind the vector tools, independent of the MCP layer.

Every argument is validated here and each error names its argument; nothing here writes.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import asyncpg
import numpy as np
import shapely
from mcp.server.mcpserver.exceptions import ToolError

from stacgis_common.arguments import ArgumentError, NotFoundError, limit_argument, still_loading, text_argument
from stacgis_common.embeddings import EmbeddingError, EmbeddingsClient
from stacgis_common.ranking import Fused, reciprocal_rank_fusion
from stacgis_vector import places, store
from stacgis_vector.geometry import bounds_list, parse_bbox, simplify_for_result
from stacgis_vector.names import normalize_name
from stacgis_vector.settings import VectorSettings
from stacgis_vector.store import FeatureKey

MAX_FEATURE_ID_CHARS = 100
SUGGESTIONS = 3
MAX_SIMPLIFY_DEGREES = 10.0
RESULT_DECIMALS = 6
# The dataset whose places name the map's points (GET /places/labels).
LABEL_DATASET = "cities"
# How a place search candidate matched, by store.rank_by_name's tier.
PLACE_MATCHES = {store.NAME_TIER: "name", store.ALTERNATE_NAME_TIER: "alternate name", store.PREFIX_TIER: "name prefix"}


def _round(values: list[float], decimals: int = 5) -> list[float]:
    return [round(float(value), decimals) for value in values]


def feature_summary(row: asyncpg.Record) -> dict[str, Any]:
    """A feature as search and box results show it: no geometry, just where it is."""
    out: dict[str, Any] = {
        "ref": {"dataset": row["dataset"], "id": row["id"]},
        "name": row["name"],
        "description": row["embedding_text"],
        "geometry_type": row["geometry_type"],
    }
    if row["geometry_type"] == "Point":
        out["coordinates"] = _round([row["anchor_lon"], row["anchor_lat"]])
    else:
        out["bbox"] = _round(bounds_list(row["bbox"]))
        out["label_point"] = _round([row["anchor_lon"], row["anchor_lat"]])
    properties = json.loads(row["properties"])
    out["properties"] = {key: properties[key] for key in row["summary_properties"] if properties.get(key) is not None}
    return out


class VectorService:
    def __init__(self, settings: VectorSettings, pool: asyncpg.Pool, embedder: EmbeddingsClient) -> None:
        self.settings = settings
        self.pool = pool
        self.embedder = embedder

    # -- validation --------------------------------------------------------------------------

    async def _dataset(self, value: Any) -> str:
        known = await store.dataset_ids(self.pool)
        if not isinstance(value, str) or value not in known:
            listed = ", ".join(known) if known else "none are loaded yet"
            message = f"unknown dataset {value!r}; known datasets: {listed}"
            raise ArgumentError("dataset", await self._with_loading(message))
        return value

    def _load_entry(self, row: asyncpg.Record) -> dict[str, Any]:
        """A load under way as /places/status lists it: loading, or stalled once silent too long."""
        idle = float(row["idle"])
        return {
            "id": row["dataset"],
            "state": "stalled" if idle > self.settings.load_stalled_seconds else "loading",
            "stage": row["stage"],
            "done": row["done"],
            "total": row["total"],
            "updated_seconds_ago": round(idle, 1),
        }

    async def _loading(self) -> str | None:
        """What is still being loaded, as a sentence for a tool's answer; None once everything is in."""
        entries = [self._load_entry(row) for row in await store.loads(self.pool)]
        loading = [entry for entry in entries if entry["state"] == "loading"]
        if not loading:
            return None
        parts = [f"{entry['id']} ({entry['stage']} {entry['done']:,} of {entry['total']:,})" for entry in loading]
        return still_loading(f"the place names of {', '.join(parts)}")

    async def _with_loading(self, message: str) -> str:
        loading = await self._loading()
        return f"{message}. Note: {loading}" if loading else message

    async def _embed(self, text: str) -> list[float]:
        try:
            return await self.embedder.embed_one(text)
        except EmbeddingError as error:
            raise ToolError(f"semantic search is unavailable: {error}") from None

    # -- tools -------------------------------------------------------------------------------

    async def load_status(self) -> dict[str, Any]:
        """The datasets in and those still loading (python -m stacgis_vector.load running beside the service):
        {"loading": any still arriving, "datasets": [{"id", "state": "loaded"|"loading"|"stalled", ...}]}.
        A dataset being reloaded is listed as loading, its previous features still served meanwhile."""
        under_way, datasets = await store.loads_and_datasets(self.pool)
        entries: dict[str, dict[str, Any]] = {
            row["id"]: {"id": row["id"], "state": "loaded", "features": row["feature_count"]} for row in datasets
        }
        entries.update({row["dataset"]: self._load_entry(row) for row in under_way})
        listed = [entries[key] for key in sorted(entries)]
        return {"loading": any(entry["state"] == "loading" for entry in listed), "datasets": listed}

    async def list_datasets(self) -> dict[str, Any]:
        datasets = await store.list_datasets(self.pool)
        return {"datasets": datasets, "count": len(datasets)}

    async def search(self, query: Any, dataset: Any, bbox: Any, limit: Any) -> dict[str, Any]:
        text = text_argument(query, "query", self.settings.max_query_chars)
        filters = store.Filters(
            dataset=await self._dataset(dataset) if dataset is not None else None,
            box=parse_bbox(bbox) if bbox is not None else None,
        )
        count = limit_argument(limit, self.settings.max_limit)
        vector = await self._embed(text)
        candidates = max(self.settings.candidates_per_ranker, count)
        by_name, by_text, by_vector = await asyncio.gather(
            store.rank_by_name(self.pool, normalize_name(text), filters, candidates),
            store.rank_by_text(self.pool, text, filters, candidates),
            store.rank_by_vector(self.pool, vector, filters, candidates, self.settings.hnsw_ef_search),
        )
        similarity = dict(by_vector)
        fused = reciprocal_rank_fusion(
            {"name": [key for key, _ in by_name], "full_text": by_text, "semantic": [key for key, _ in by_vector]},
            self.settings.rrf_k,
        )
        rows = await store.summaries(self.pool, [entry.key for entry in fused])
        # Places whose name is exactly the query come first, the most populous first ("Luxembourg":
        # the country, then the city; "Paris": France's, then Texas'); the rest follow by fused
        # score, equal scores going to the larger population. Alternate names are not promoted:
        # GeoNames lists many loose ones (North Canton, Ohio is also "Berlin").
        exact = {key for key, tier in by_name if tier == store.NAME_TIER}

        def order(entry: Fused[FeatureKey]) -> tuple[int, int, float, int]:
            population = rows[entry.key]["population"] or 0
            if entry.key in exact:
                return (0, -population, -entry.score, 0)
            return (1, 0, -entry.score, -population)

        fused.sort(key=order)
        results = []
        for entry in fused[:count]:
            results.append({**feature_summary(rows[entry.key]), **entry.result_fields(similarity)})
        answer: dict[str, Any] = {"query": text, "results": results, "count": len(results)}
        loading = await self._loading()
        if loading is not None:
            answer["note"] = loading
        return answer

    async def get_feature(self, dataset: Any, feature_id: Any, simplify: Any) -> dict[str, Any]:
        name = await self._dataset(dataset)
        if isinstance(feature_id, int) and not isinstance(feature_id, bool):
            feature_id = str(feature_id)
        if not isinstance(feature_id, str) or not feature_id.strip() or len(feature_id) > MAX_FEATURE_ID_CHARS:
            raise ArgumentError("feature_id", f"must be a non-empty id of at most {MAX_FEATURE_ID_CHARS} characters")
        tolerance: float | None = None
        if simplify is not None:
            valid = isinstance(simplify, (int, float)) and not isinstance(simplify, bool) and math.isfinite(simplify)
            if not valid or not 0 < simplify <= MAX_SIMPLIFY_DEGREES:
                raise ArgumentError("simplify", f"must be a tolerance in degrees, > 0 and <= {MAX_SIMPLIFY_DEGREES}")
            tolerance = float(simplify)
        row = await store.feature(self.pool, name, feature_id.strip())
        if row is None:
            raise ArgumentError(
                "feature_id", f"dataset {name!r} has no feature {feature_id!r}; search_vector_features gives ids"
            )
        out = feature_summary(row)
        out["properties"] = json.loads(row["properties"])
        out["bbox"] = _round(bounds_list(row["bbox"]))
        geometry = shapely.from_geojson(row["geometry_json"])
        if tolerance is None and row["vertex_count"] <= self.settings.max_result_vertices:
            out["geometry"] = json.loads(row["geometry_json"])
            out["geometry_simplification"] = None
        else:
            result = simplify_for_result(geometry, tolerance, self.settings.max_result_vertices)
            rounded = shapely.transform(result.geometry, lambda coords: np.round(coords, RESULT_DECIMALS))
            out["geometry"] = json.loads(shapely.to_geojson(rounded))
            out["geometry_simplification"] = {
                "tolerance_degrees": result.tolerance,
                "original_vertices": result.original_vertices,
                "vertices": result.vertices,
                "dropped_parts": result.dropped_parts,
                "note": "simplified for display; tools taking the ref use the full geometry",
            }
        return out

    async def query_by_bbox(self, dataset: Any, bbox: Any, limit: Any, place: Any = None) -> dict[str, Any]:
        name = await self._dataset(dataset)
        count = limit_argument(limit, self.settings.max_bbox_limit)
        resolved: places.Resolved | None = None
        if place is not None:
            resolved = await self.resolve(place, None)
        elif bbox is None:
            raise ArgumentError("bbox", "give bbox [west, south, east, north] or place (a place name)")
        matched: list[str] = []
        if resolved is not None and resolved.row["geometry_type"] != "Point":
            # A named area is tested against its boundary, not its box: "cities in Luxembourg".
            box = parse_bbox(bounds_list(resolved.row["bbox"]))
            full = await store.feature(self.pool, resolved.row["dataset"], resolved.row["id"])
            assert full is not None
            area = shapely.from_geojson(full["geometry_json"])
            shapely.prepare(area)
            for row in await store.candidates_with_geometry(self.pool, name, box):
                if area.intersects(shapely.from_geojson(row["geometry_json"])):
                    matched.append(row["id"])
        else:
            if resolved is not None:
                raise ArgumentError(
                    "place",
                    f"{resolved.place['name']!r} is a point ({resolved.place['kind']}); name an area "
                    "(a country, US state or county) or give bbox",
                )
            box = parse_bbox(bbox)
            candidates = await store.box_candidates(self.pool, name, box)
            area = box.shape()
            shapely.prepare(area)
            for row in candidates:
                if row["inside"] or area.intersects(shapely.from_geojson(row["geometry_json"])):
                    matched.append(row["id"])
        rows = await store.summaries(self.pool, [(name, feature_id) for feature_id in matched[:count]])
        features = [feature_summary(rows[(name, feature_id)]) for feature_id in matched[:count]]
        extra: dict[str, Any] = {}
        if resolved is not None:
            extra["place"] = {**resolved.place, "used": "boundary"}
            if bbox is not None:
                extra["place"]["note"] = "place used; bbox ignored"
        return {
            "dataset": name,
            **extra,
            "bbox": box.as_list(),
            "matched": len(matched),
            "returned": len(features),
            "truncated": len(matched) > len(features),
            "features": features,
        }

    async def resolve(self, place: Any, dataset: Any) -> places.Resolved:
        text = text_argument(place, "place", self.settings.max_query_chars)
        only = await self._dataset(dataset) if dataset is not None else None
        try:
            return await places.resolve(self.pool, text, only)
        except places.PlaceNotFound as error:
            loading = await self._loading()
            if loading is not None:
                # Berlin is not missing, its city is not in yet: say so instead of offering near names.
                raise places.PlaceNotFound(error.argument, f"{error.detail}. Note: {loading}", []) from None
            if error.suggestions or "/" in text:
                raise
            # Near names from the hybrid search, offered to choose from, never used as the answer.
            found = await self.search(text, only, None, SUGGESTIONS)
            suggestions = [f"{hit['name']} ({hit['ref']['dataset']}/{hit['ref']['id']})" for hit in found["results"]]
            raise places.PlaceNotFound(
                "place",
                f"{error.detail}. Nearest names (not matches): {'; '.join(suggestions)}",
                found["results"],
            ) from None

    async def resolve_place(self, place: Any, dataset: Any) -> dict[str, Any]:
        try:
            resolved = await self.resolve(place, dataset)
        except places.AmbiguousPlace as error:
            return {"query": place, "status": "ambiguous", "message": error.detail, "candidates": error.candidates}
        return {"query": place, "status": "resolved", "place": resolved.place}

    async def search_places(self, query: Any, limit: Any) -> dict[str, Any]:
        """A search box's candidates: places whose name or alternate name is the words typed, then those
        whose name starts with them (larger places first); each described as resolve_place describes a
        place (name, kind, country, point or box, ref). Names only (descriptions would match "Paris" to
        other cities), no embeddings: cheap per keystroke."""
        text = text_argument(query, "q", self.settings.max_query_chars)
        count = limit_argument(limit, self.settings.max_limit)
        everywhere = store.Filters(dataset=None, box=None)
        by_name = await store.rank_by_name(self.pool, normalize_name(text), everywhere, count)
        matched_by = {key: PLACE_MATCHES[tier] for key, tier in by_name}
        keys = list(matched_by)
        rows = await store.summaries(self.pool, keys)
        results = [places.describe(rows[key], matched_by[key]) for key in keys if key in rows]
        return {"query": text, "results": results, "count": len(results)}

    async def place_labels(self, bbox: Any, limit: Any) -> dict[str, Any]:
        """City names for a map view: the most populous cities whose point is in the box, largest first
        (west > east crosses the antimeridian)."""
        box = parse_bbox(bbox)
        count = limit_argument(limit, self.settings.max_label_limit)
        rows = await store.most_populous_in(self.pool, LABEL_DATASET, box, count)
        labels = []
        for row in rows:
            label: dict[str, Any] = {
                "name": row["name"],
                "lon": round(float(row["anchor_lon"]), 5),
                "lat": round(float(row["anchor_lat"]), 5),
                "population": int(row["population"] or 0),
                "ref": f"{LABEL_DATASET}/{row['id']}",
            }
            if row["country"]:
                label["country"] = row["country"]
            labels.append(label)
        return {"bbox": box.as_list(), "labels": labels, "count": len(labels)}

    async def resolved_feature(self, place: Any, dataset: Any) -> str:
        """{"place": ..., "feature": full GeoJSON Feature} of a resolved place, serialised (internal endpoint)."""
        resolved = await self.resolve(place, dataset)
        feature = await self.full_feature(resolved.row["dataset"], resolved.row["id"])
        return f'{{"status": "resolved", "place": {json.dumps(resolved.place)}, "feature": {feature}}}'

    async def full_feature(self, dataset: str, feature_id: str) -> str:
        """The GeoJSON Feature with its full geometry, serialised (for the internal endpoint); a missing
        one names the dataset when no dataset has that id, else the feature id."""
        row = await store.feature(self.pool, dataset, feature_id)
        if row is None:
            known = dataset in await store.dataset_ids(self.pool)
            raise NotFoundError(
                "feature_id" if known else "dataset", f"dataset {dataset!r} has no feature {feature_id!r}"
            )
        properties = {**json.loads(row["properties"]), "name": row["name"], "dataset": dataset}
        head = json.dumps(
            {"type": "Feature", "id": feature_id, "bbox": bounds_list(row["bbox"]), "properties": properties}
        )
        # The stored geometry is spliced in as text: no parse and re-serialise of large polygons.
        return f'{head[:-1]}, "geometry": {row["geometry_json"]}}}'
