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
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

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


def parse(text: str) -> Pins:
    """`name==version` lines (comments and blank lines skipped); anything else is refused."""
    pins: Pins = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, equals, version = line.partition("==")
        if not equals or not name.strip() or not version.strip() or any(c in line for c in " @;:/"):
            raise ValueError(f"line {number}: {raw!r} is not name==version")
        if not canonicalize_name(name).startswith(LOCAL_PACKAGE_PREFIX):
            pins[canonicalize_name(name)] = (name.strip(), version.strip())
    return pins


def read(path: Path = CONSTRAINTS) -> Pins:
    return parse(path.read_text())


def render(pins: Pins) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for _, (name, version) in sorted(pins.items()))


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


def check(constraints: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    pins = dict(constraints) if constraints is not None else read()
    return venv_differences(pins, installed()) + pin_differences(pins, requirement_pins())


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
