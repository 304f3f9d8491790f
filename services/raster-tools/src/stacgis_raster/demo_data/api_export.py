"""The demo catalog as files a STAC API server loads: one JSON per collection and the items as NDJSON.

`rustac serve OUT/collections/*.json OUT/items.ndjson` then serves the same collections and items
through the STAC API (item search with bbox, datetime and paging), so raster-tools can be pointed at
a real STAC API with `RASTER_STAC_URL` alone. Asset hrefs become absolute paths: the server hands
items out as they are, and raster-tools opens them under its allowed roots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pystac


def export_for_api(catalog: Path, out: Path) -> tuple[list[Path], Path]:
    """Write OUT/collections/<id>.json and OUT/items.ndjson; return the files a server loads."""
    root = pystac.Catalog.from_file(str(catalog))
    root.make_all_asset_hrefs_absolute()
    (out / "collections").mkdir(parents=True, exist_ok=True)
    collection_files = []
    partial = out / "items.ndjson.partial"
    with partial.open("w", encoding="utf-8") as items:
        for collection in root.get_all_collections():
            data = collection.to_dict(include_self_link=False, transform_hrefs=False)
            # Links to files of the static catalog mean nothing to the server's clients.
            data["links"] = [link for link in data["links"] if link["rel"] not in {"item", "root", "parent", "child"}]
            path = out / "collections" / f"{collection.id}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            collection_files.append(path)
            for item in collection.get_items():
                record = item.to_dict(include_self_link=False, transform_hrefs=False)
                record["links"] = []
                record["collection"] = collection.id
                items.write(json.dumps(record, separators=(",", ":")) + "\n")
    os.replace(partial, out / "items.ndjson")
    return collection_files, out / "items.ndjson"
