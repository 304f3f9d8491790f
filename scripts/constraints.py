#!/usr/bin/env python3
"""The constraints file: the exact version of every distribution the product installs (`make constraints`).

    scripts/constraints.py write   record what .venv holds now into constraints.txt
    scripts/constraints.py check   exit 1 naming each distribution where .venv, constraints.txt and the
                                   requirement pins disagree (tests/chart/test_constraints.py runs it)

Direct requirements keep their pins in the pyproject.toml and requirements files; constraints.txt adds
the transitive ones, so a fresh machine (scripts/setup.sh) and every image build (the Dockerfiles,
scripts/images.py) get the versions the tests ran against. It is written from `pip list --format=freeze
--exclude-editable` of the working venv, which prints `name==version` only: no index URL or local path
is recorded. The project's own packages (stacgis-*) are left out: they are installed from the tree.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
LOCAL_PACKAGE_PREFIX = "stacgis-"
# The files that pin .venv's direct requirements (scripts/setup.sh installs these projects and files).
# tests/chart/requirements-checkov.txt is not among them: it is the lock of checkov's own virtualenv.
PYPROJECTS = ("services/*/pyproject.toml", "proto/python/pyproject.toml", "dev/*/pyproject.toml",
              "observability/pyproject.toml")  # fmt: skip
REQUIREMENT_FILES = ("tests/requirements.txt", "dev/model-server/requirements-nodeps.txt")
HEADER = """\
# Every distribution the product installs, at the version its tests ran against: scripts/setup.sh and
# every image build install with `-c constraints.txt`. Written by `make constraints`
# (scripts/constraints.py write) from the working .venv; do not edit by hand. After changing a pin
# in a pyproject.toml or requirements file: `make setup`, then `make constraints`.
"""

# Pins .venv cannot show: what only the images' Python needs, whose version (Debian's 3.11.2, or the
# official image's 3.11.11) differs from .venv's. Each keeps the marker that makes it apply, so pip
# uses it only there; `write` keeps them and `check` names a new one (image_only_requirements).
MARKED = ('async-timeout==5.0.1; python_full_version < "3.11.3"',)  # redis on Python < 3.11.3
MARKED_HEADER = "# Only where the marker holds (the images' Python), so not in .venv:\n"
# The distributions pip builds from an sdist on this machine (the index has no wheel for them), each with
# the pin of its build back end, which setup.sh applies with --build-constraint: never in .venv. The
# WHEEL file of the wheel built here names the back end and version that built it.
BUILT_HERE = {"llama-cpp-python": "scikit-build-core==1.1.2"}
BUILD_ONLY = tuple(BUILT_HERE.values())
BUILD_HEADER = "# Only to build an sdist here (setup.sh's --build-constraint), so not in .venv:\n"

Pins = dict[str, tuple[str, str]]  # canonical name -> (name as written, version)


def installed(python: Path = VENV_PYTHON) -> Pins:
    """The distributions in the virtualenv of `python`, editable and stacgis-* packages left out."""
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze", "--exclude-editable", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse(listed)


def marker_environment(python: str | None = None) -> dict[str, str]:
    """This interpreter's marker environment (no extra requested), or with another Python version's."""
    environment = {key: str(value) for key, value in default_environment().items()} | {"extra": ""}
    if python is not None:
        environment |= {"python_full_version": python, "python_version": ".".join(python.split(".")[:2])}
    return environment


def parse(text: str, python: str | None = None) -> Pins:
    """`name==version` lines, optionally `; marker` (comments and blank lines skipped); anything else, a URL
    or a path, is refused. A line whose marker does not hold for `python` (a full version; default: this
    interpreter) is left out."""
    here = marker_environment(python)
    pins: Pins = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line, _, marker = raw.split("#", 1)[0].partition(";")
        name, equals, version = line.strip().partition("==")
        if not line.strip():
            continue
        if not equals or not name.strip() or not version.strip() or re.search(r"[\s@:/]", line.strip()):
            raise ValueError(f"line {number}: {raw!r} is not name==version")
        if marker.strip() and not Marker(marker).evaluate(here):
            continue
        if not canonicalize_name(name).startswith(LOCAL_PACKAGE_PREFIX):
            pins[canonicalize_name(name)] = (name.strip(), version.strip())
    return pins


def read(path: Path = CONSTRAINTS, python: str | None = None) -> Pins:
    """What an install may bring (for `python`'s markers): the build-only pins left out."""
    build = parse("\n".join(BUILD_ONLY))
    return {key: pin for key, pin in parse(path.read_text(), python).items() if key not in build}


def render(pins: Pins) -> str:
    kept = parse("\n".join([*(line.split(";")[0] for line in MARKED), *BUILD_ONLY]))
    lines = [f"{name}=={version}\n" for key, (name, version) in sorted(pins.items()) if key not in kept]
    marked = MARKED_HEADER + "".join(f"{line}\n" for line in MARKED)
    return HEADER + "".join(lines) + marked + BUILD_HEADER + "".join(f"{line}\n" for line in BUILD_ONLY)


def wheel_generator(distribution: str) -> str:
    """`name==version` of the build back end that made the installed wheel of `distribution` (its WHEEL file)."""
    wheel = importlib.metadata.distribution(distribution).read_text("WHEEL") or ""
    name, _, version = wheel.partition("Generator:")[2].strip().partition("\n")[0].partition(" ")
    return f"{name}=={version.strip()}"


def image_pythons(repo: Path = REPO) -> list[str]:
    """The Python versions of the images' bases: Debian's (the python3 pin of scripts/images.py) and the
    official image the Dockerfiles default to."""
    found = set(re.findall(r'"python3=(\d+\.\d+\.\d+)-', (repo / "scripts" / "images.py").read_text()))
    for dockerfile in repo.glob("services/*/Dockerfile"):
        found |= set(re.findall(r"ARG PYTHON_IMAGE=python:(\d+\.\d+\.\d+)", dockerfile.read_text()))
    return sorted(found)


def image_only_requirements(text: str, pythons: Iterable[str]) -> list[str]:
    """Each dependency a pinned distribution (as installed here) has only under an image's Python, by a
    marker that does not hold here, and that constraints.txt does not pin for that Python."""
    here = marker_environment()
    problems = []
    for python in pythons:
        pins = parse(text, python)
        there = marker_environment(python)
        for key, (name, version) in sorted(pins.items()):
            try:
                requires = importlib.metadata.distribution(key).requires or []
            except importlib.metadata.PackageNotFoundError:
                continue
            for line in requires:
                requirement = Requirement(line)
                marker = requirement.marker
                if marker is None or not marker.evaluate(there) or marker.evaluate(here):
                    continue
                if canonicalize_name(requirement.name) not in pins:
                    problems.append(
                        f"{name}=={version} needs {requirement} on Python {python} (an image's), which is not pinned"
                        " there: add it to MARKED in scripts/constraints.py"
                    )
    return problems


def venv_differences(constraints: Pins, venv: Pins, fix: str = "make constraints") -> list[str]:
    """Each distribution the venv holds at another version than the constraints, or only one side has."""
    problems = []
    for key in sorted(constraints.keys() | venv.keys()):
        if key not in venv:
            problems.append(f"{constraints[key][0]}=={constraints[key][1]} is pinned but not installed")
        elif key not in constraints:
            problems.append(f"{venv[key][0]}=={venv[key][1]} is installed but not pinned")
        elif constraints[key][1] != venv[key][1]:
            problems.append(f"{venv[key][0]} is {venv[key][1]} installed, {constraints[key][1]} pinned")
    return [f"{problem} ({fix})" for problem in problems]


def requirement_pins(repo: Path = REPO) -> list[tuple[str, Requirement]]:
    """(where, requirement) of every third-party requirement the pyproject.toml and requirements files name:
    dependencies, optional dependencies and build requirements."""
    found: list[tuple[str, Requirement]] = []
    for pattern in PYPROJECTS:
        for pyproject in sorted(repo.glob(pattern)):
            config = tomllib.loads(pyproject.read_text())
            project = config.get("project", {})
            lines = [*project.get("dependencies", []), *config.get("build-system", {}).get("requires", [])]
            for extra in project.get("optional-dependencies", {}).values():
                lines += extra
            found += [(str(pyproject.relative_to(repo)), Requirement(line)) for line in lines]
    for name in REQUIREMENT_FILES:
        for raw in (repo / name).read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if line:
                found.append((name, Requirement(line)))
    return [(where, r) for where, r in found if not canonicalize_name(r.name).startswith(LOCAL_PACKAGE_PREFIX)]


def pin_differences(constraints: Pins, pins: Iterable[tuple[str, Requirement]]) -> list[str]:
    """Each requirement the constraints do not pin, or pin to a version it does not allow."""
    problems = []
    for where, requirement in pins:
        pinned = constraints.get(canonicalize_name(requirement.name))
        if pinned is None:
            problems.append(f"{where}: {requirement} is not in constraints.txt")
        elif not requirement.specifier.contains(pinned[1], prereleases=True):
            problems.append(f"{where}: {requirement} but constraints.txt pins {pinned[0]}=={pinned[1]}")
    return problems


def check() -> list[str]:
    pins = read()
    problems = venv_differences(pins, installed()) + pin_differences(pins, requirement_pins())
    return problems + image_only_requirements(CONSTRAINTS.read_text(), image_pythons())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("write", "check"))
    args = parser.parse_args(argv)
    if args.command == "write":
        pins = installed()
        # A venv with a broken dependency is no state to record.
        broken = subprocess.run([str(VENV_PYTHON), "-m", "pip", "check"], capture_output=True, text=True)
        problems = [broken.stdout.strip()] if broken.returncode else []
        problems += pin_differences(pins, requirement_pins())
        problems += image_only_requirements(render(pins), image_pythons())
        if problems:
            print("\n".join(["the venv disagrees with the pins (run make setup first):", *problems]), file=sys.stderr)
            return 1
        CONSTRAINTS.write_text(render(pins))
        print(f"{CONSTRAINTS.relative_to(REPO)}: {len(pins)} distributions")
        return 0
    problems = check()
    print("\n".join(problems) or f"{CONSTRAINTS.relative_to(REPO)} agrees with .venv and every pin")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
