"""What the band and time arguments mean for a collection: the band named (or meant) and the time
steps of `datetime` (the arguments themselves are parsed in `tool_args`)."""

from __future__ import annotations

from stacgis_common.arguments import ArgumentError
from stacgis_raster.errors import UpstreamError
from stacgis_raster.records import BandInfo, CollectionRecord
from stacgis_raster.tool_args import Band, Period
from stacgis_raster.validation import TimeInterval

# Names of statistics a model writes where a band is asked; no band is named so.
STATISTIC_WORDS = frozenset(
    {"mean", "average", "avg", "min", "minimum", "max", "maximum", "median", "sum", "std", "total", "count"}
    | {"share", "fraction", "percent", "percentage", "proportion", "majority", "mode", "class", "classes"}
)


def interval_for(record: CollectionRecord, period: Period | None) -> TimeInterval | None:
    """The `datetime` argument for a collection. One that is not time-resolved has no dates to choose
    from, so whatever a model put there ("not time-resolved", copied from the catalogue) is ignored;
    the result's time note says the collection is not time-resolved."""
    return period.for_collection(record.time_resolved) if period is not None else None


def select_band(record: CollectionRecord, band: Band, argument: str = "band") -> BandInfo:
    """The band a `band` argument means, read as meant where a small model writes it nearly right."""
    if not record.bands:
        raise UpstreamError(f"collection '{record.id}' describes no raster bands")
    if band is None or (isinstance(band, str) and band.strip().lower() in STATISTIC_WORDS):
        # "band": "mean" is a statistic the model wants, not a band: every result has them all.
        return record.bands[0]
    if isinstance(band, int) and not isinstance(band, bool):
        if 1 <= band <= len(record.bands):
            return record.bands[band - 1]
    elif isinstance(band, str):
        if band.isdigit() and 1 <= int(band) <= len(record.bands):
            return record.bands[int(band) - 1]
        for info in record.bands:
            if info.name.lower() == band.lower():
                return info
        wanted = band.strip().lower()
        # The quantity written as the band ("temperature" for tas) of a one-band collection about it.
        if len(record.bands) == 1 and wanted in {k.lower() for k in record.keywords}:
            return record.bands[0]
        # A class written as the band ("forest" for the share of Evergreen Forest): the band holding it.
        for info in record.bands:
            if wanted and any(wanted in name.lower() for name in (info.classes or {}).values()):
                return info
    names = ", ".join(f"{b.index}={b.name}" for b in record.bands)
    raise ArgumentError(argument, f"'{band}' is not a band of '{record.id}'; bands are {names}")
