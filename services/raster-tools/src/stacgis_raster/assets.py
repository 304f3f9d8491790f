"""Where raster and catalog reads may go: configured hosts and local roots only.

Asset hrefs come from catalogs the operator does not necessarily control, so a
href is never opened before it passes this guard (no server-side request
forgery through `http://169.254.169.254/...`, no `../../etc/passwd`, no GDAL
`/vsi...` tricks).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from stacgis_raster.errors import UpstreamError


def host_matches(host: str, patterns: Iterable[str]) -> bool:
    """`host` is one of `patterns`: exact names or `*.example.org` for its subdomains."""
    host = host.lower()
    return any(host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in patterns)


class AssetNotAllowed(UpstreamError):
    """A catalog pointed at a location outside the configured allow-lists."""


class AssetGuard:
    def __init__(self, local_roots: Iterable[Path], remote_hosts: Iterable[str]) -> None:
        self.local_roots = [Path(root).resolve() for root in local_roots]
        self.remote_hosts = [host.lower().strip() for host in remote_hosts if host.strip()]

    def allow_root(self, root: Path) -> None:
        resolved = root.resolve()
        if resolved not in self.local_roots:
            self.local_roots.append(resolved)

    def allow_host(self, host: str) -> None:
        if host and host.lower() not in self.remote_hosts:
            self.remote_hosts.append(host.lower())

    def host_allowed(self, host: str) -> bool:
        return "*" in self.remote_hosts or host_matches(host, self.remote_hosts)

    def check(self, href: str) -> str:
        """Return a path or URL rasterio may open, or raise AssetNotAllowed."""
        if href.startswith("/vsi"):
            raise AssetNotAllowed(f"GDAL virtual file system paths are not allowed: {href}")
        parts = urlsplit(href)
        scheme = parts.scheme.lower()
        if scheme in {"http", "https"}:
            host = parts.hostname or ""
            if not self.host_allowed(host):
                raise AssetNotAllowed(f"reading from host '{host}' is not allowed (set RASTER_ALLOWED_REMOTE_HOSTS)")
            return href
        if scheme == "file":
            path = Path(unquote(parts.path))
        elif scheme == "" or (len(scheme) == 1 and href[1:3] in {":\\", ":/"}):
            path = Path(href)
        else:
            raise AssetNotAllowed(f"scheme '{scheme}' is not supported for {href}")
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in self.local_roots):
            raise AssetNotAllowed(
                f"local path {resolved} is outside the allowed roots (set RASTER_ALLOWED_LOCAL_ROOTS)"
            )
        return str(resolved)
