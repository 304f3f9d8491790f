"""Shared-access signatures for assets in private blob storage (Microsoft Planetary Computer).

Planetary Computer's STAC items point at Azure Blob Storage, readable only with a SAS token that
its token endpoint hands out per collection: `GET {RASTER_SAS_TOKEN_URL}/{collection}` answers
`{"token": "st=...&se=...&sig=...", "msft:expiry": "2026-12-03T15:00:00Z"}`, and a signed href is
the href with the token as its query. Tokens are cached per collection until shortly before they
expire. Hrefs on other hosts (and hrefs already signed) are left as they are.
"""

from __future__ import annotations

import datetime as dt
import threading
from urllib.parse import urlsplit

import httpx

from stacgis_raster.assets import host_matches
from stacgis_raster.errors import UpstreamError

# A token this close to its expiry is renewed first: a long read must not run past it.
RENEW_BEFORE = dt.timedelta(minutes=5)


class Signer:
    def __init__(self, token_url: str | None, hosts: list[str], timeout: float) -> None:
        self.token_url = token_url.rstrip("/") if token_url else None
        self.hosts = [h.lower() for h in hosts]
        self.timeout = timeout
        self._tokens: dict[str, tuple[str, dt.datetime]] = {}
        self._lock = threading.Lock()

    def sign(self, href: str, collection_id: str) -> str:
        """`href` with a token for `collection_id` when it lies on a signed host (blocking I/O)."""
        if self.token_url is None:
            return href
        parts = urlsplit(href)
        if parts.scheme not in ("http", "https") or not host_matches(parts.hostname or "", self.hosts):
            return href
        if "sig=" in parts.query:
            return href
        token = self._token(collection_id)
        return f"{href}{'&' if parts.query else '?'}{token}"

    def _token(self, collection_id: str) -> str:
        now = dt.datetime.now(dt.UTC)
        with self._lock:
            cached = self._tokens.get(collection_id)
        if cached is not None and cached[1] - RENEW_BEFORE > now:
            return cached[0]
        url = f"{self.token_url}/{collection_id}"
        try:
            response = httpx.get(url, timeout=self.timeout, follow_redirects=False)
            response.raise_for_status()
            body = response.json()
            token = str(body["token"]).lstrip("?")
            expiry = dt.datetime.fromisoformat(str(body["msft:expiry"]).replace("Z", "+00:00"))
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise UpstreamError(
                f"could not get an access token for collection '{collection_id}' from {url} "
                f"(RASTER_SAS_TOKEN_URL): {type(exc).__name__}: {exc}"
            ) from exc
        with self._lock:
            self._tokens[collection_id] = (token, expiry)
        return token
