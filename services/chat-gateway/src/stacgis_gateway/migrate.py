"""`python -m stacgis_gateway.migrate`: apply the gateway's Postgres migrations and exit.

The gateway also applies them at start (advisory-locked, so replicas never race); the chart's
migration Job and `make up` run this first so a bad migration fails before any replica starts.
"""

from __future__ import annotations

import asyncio

from stacgis_common.db import migrate_dsn
from stacgis_common.settings import load_settings

from .config import GatewaySettings
from .store import MIGRATIONS, SCHEMA


def main() -> None:
    settings = load_settings(GatewaySettings)
    applied = asyncio.run(migrate_dsn(settings.database_url, SCHEMA, MIGRATIONS))
    print(f"gateway migrations: {', '.join(applied) if applied else 'up to date'}")


if __name__ == "__main__":
    main()
