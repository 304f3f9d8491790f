"""Turns the rows of the dataset table into collection specs whose items load lazily."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from stacgis_common.packages import PackageCache, SourceFile
from stacgis_raster.demo_data.datasets import DATASETS
from stacgis_raster.demo_data.loaders import netcdf_band_loader, netcdf_months, read_class_table
from stacgis_raster.demo_data.model import (
    PACKAGE_HOST,
    CollectionSpec,
    DatasetSpec,
    ItemSpec,
    NetcdfMonths,
    Provider,
)

REGISTRY_LABELS = {"debian": "Debian package", "pypi": "PyPI package", "npm": "npm package"}


def cog_path(stac_dir: Path, collection_id: str, item_id: str) -> Path:
    # The COG sits beside its item JSON, so the catalog stays self-contained.
    return stac_dir / collection_id / item_id / f"{item_id}.tif"


def package_host(source: SourceFile) -> Provider:
    package = source.package
    label = f"{REGISTRY_LABELS[package.registry]} {package.name} {package.version}"
    return Provider(label, ("host",), package.homepage)


def _items(row: DatasetSpec, src: SourceFile, stac_dir: Path) -> list[ItemSpec]:
    if isinstance(row.items, NetcdfMonths):
        months = []
        for index, (start, end, stamp) in enumerate(netcdf_months(src.path, row.items.variable), start=1):
            item_id = f"{row.id}-{start:%Y-%m}"
            load = netcdf_band_loader(src.path, row.items.variable, index)
            months.append(ItemSpec(item_id, cog_path(stac_dir, row.id, item_id), load, stamp, start, end))
        return months
    item_id = row.items.item_id or row.id
    load = partial(row.items.load, src.path)
    if row.items.period is None:
        return [ItemSpec(item_id, cog_path(stac_dir, row.id, item_id), load, datetime=src.timestamp)]
    start, end = row.items.period
    return [ItemSpec(item_id, cog_path(stac_dir, row.id, item_id), load, datetime=start, start=start, end=end)]


def collection_spec(row: DatasetSpec, cache: PackageCache, stac_dir: Path) -> CollectionSpec:
    src = cache.file(row.package, row.path)
    sources = [src]
    classes = list(row.classes) if row.classes is not None else None
    if row.class_table is not None:
        aux = cache.file(row.package, row.class_table)
        sources.append(aux)
        classes = read_class_table(aux.path)
    host = package_host(src)
    return CollectionSpec(
        id=row.id,
        title=row.title,
        description=row.description,
        keywords=list(row.keywords),
        license=row.license,
        providers=[(host if p is PACKAGE_HOST else p).as_dict() for p in row.providers],
        sources=sources,
        bands=list(row.bands),
        items=_items(row, src, stac_dir),
        time_resolved=row.time_resolved,
        overview_resampling=row.overview_resampling,
        classes=classes,
        colormap_name=row.colormap_name,
        render_bands=list(row.render_bands) if row.render_bands is not None else None,
        rescale=list(row.rescale) if row.rescale is not None else None,
        derived_from=row.derived_from,
        notes=list(row.notes),
    )


def collection_specs(cache: PackageCache, stac_dir: Path) -> list[CollectionSpec]:
    """Every demo collection of the table, in its order."""
    return [collection_spec(row, cache, stac_dir) for row in DATASETS]
