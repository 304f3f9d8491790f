"""constraints.txt pins every Python distribution the product installs, as .venv holds it, in agreement with
every direct pin, and every install (scripts/setup.sh, each Dockerfile, the wheel image) uses it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
from packaging.utils import canonicalize_name

from .conftest import REPO
from .test_images import DOCKERFILES, _dockerignore, ignored, parse_dockerfile

sys.path.insert(0, str(REPO / "scripts"))
import constraints as script

CHECKOV_VENV = REPO / ".local" / "tools" / "checkov"
CHECKOV_LOCK = REPO / "tests" / "chart" / "requirements-checkov.txt"
# What `python -m venv` puts in a virtualenv itself (from the host Python's ensurepip), not pip's resolution.
VENV_SEED = {"pip", "setuptools"}


@pytest.fixture(scope="module")
def pinned() -> script.Pins:
    return script.read()


def test_the_venv_holds_exactly_the_constrained_versions(pinned: script.Pins) -> None:
    problems = script.venv_differences(pinned, script.installed())
    assert not problems, "\n".join(problems)


def test_every_requirement_pin_agrees_with_the_constraints(pinned: script.Pins) -> None:
    pins = script.requirement_pins()
    # The pyproject.toml files and requirements files of every package setup.sh installs.
    assert {where.split("/")[0] for where, _ in pins} >= {"services", "proto", "dev", "observability", "tests"}
    problems = script.pin_differences(pinned, pins)
    assert not problems, "\n".join(problems)


def test_a_version_other_than_the_constraints_is_named(pinned: script.Pins) -> None:
    """The checks above fail, naming the distribution and where it is pinned, when one version moves: here a
    venv holding what the file pins, against the file with numpy moved or left out."""
    venv = dict(pinned)
    name, version = pinned["numpy"]
    moved = {**pinned, "numpy": (name, version + ".post99")}
    assert script.venv_differences(moved, venv) == [
        f"{name} is {version} installed, {version}.post99 pinned (make constraints)"
    ]
    numpy_pins = [(where, r) for where, r in script.requirement_pins() if canonicalize_name(r.name) == "numpy"]
    assert len(numpy_pins) >= 3
    expected = [f"{where}: {r} but constraints.txt pins {name}=={version}.post99" for where, r in numpy_pins]
    assert script.pin_differences(moved, numpy_pins) == expected
    assert script.pin_differences(pinned, numpy_pins) == []
    unpinned = {key: value for key, value in pinned.items() if key != "numpy"}
    assert script.venv_differences(unpinned, venv) == [
        f"{name}=={version} is installed but not pinned (make constraints)"
    ]
    assert script.venv_differences(venv, unpinned) == [
        f"{name}=={version} is pinned but not installed (make constraints)"
    ]
    assert script.pin_differences(unpinned, numpy_pins) == [
        f"{where}: {r} is not in constraints.txt" for where, r in numpy_pins
    ]


def test_the_file_is_as_the_generator_writes_it(pinned: script.Pins) -> None:
    """Sorted `name==version` lines under the header, then the marked ones and the build-only ones: no index
    URL, no local path, no stacgis-* package."""
    text = script.CONSTRAINTS.read_text()
    assert text == script.render(pinned)
    kept = (*script.MARKED, *script.BUILD_ONLY)
    lines = [line for line in text.splitlines() if line and not line.startswith("#") and line not in kept]
    assert len(lines) == len(pinned) > 100
    odd = [line for line in lines if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.!+_-]*", line)]
    assert odd == []
    assert not [line for line in lines if canonicalize_name(line).startswith(script.LOCAL_PACKAGE_PREFIX)]
    with pytest.raises(ValueError, match="line 2"):
        script.parse("numpy==2.4.6\ntorch @ file:///opt/wheels/torch.whl\n")


def test_what_only_the_images_python_needs_is_pinned_there() -> None:
    """The images run Debian's Python 3.11.2 (or the official image's 3.11.11), not .venv's: a dependency whose
    marker holds only there (redis' async-timeout below 3.11.3) is pinned with that marker."""
    pythons = script.image_pythons()
    assert "3.11.2" in pythons and len(pythons) == 2, pythons
    text = script.CONSTRAINTS.read_text()
    assert script.image_only_requirements(text, pythons) == []
    assert script.read(python="3.11.2")["async-timeout"] == ("async-timeout", "5.0.1")
    assert "async-timeout" not in script.read(python="3.11.11")
    # Without its marked pin, the dependency is named.
    without = text.replace(script.MARKED[0], "")
    (problem,) = script.image_only_requirements(without, pythons)
    assert problem.startswith(f"redis=={script.read()['redis'][1]} needs async-timeout") and "3.11.2" in problem


def test_sdists_built_here_were_built_with_the_pinned_back_end() -> None:
    """llama-cpp-python is built from its sdist on each machine: its build back end is pinned (setup.sh passes
    --build-constraint), and the wheel installed says it was built by that version."""
    everything = script.parse(script.CONSTRAINTS.read_text())
    for sdist, pin in script.BUILT_HERE.items():
        assert script.wheel_generator(sdist) == pin, f"{sdist}'s wheel was built by another back end than {pin}"
        backend = canonicalize_name(pin.partition("==")[0])
        assert everything[backend][1] == pin.partition("==")[2] and backend not in script.read()


def _setup_pip_installs() -> list[str]:
    setup = re.sub(r"\\\n\s*", " ", (REPO / "scripts" / "setup.sh").read_text())
    return [line.strip() for line in setup.splitlines() if "pip install" in line and not line.lstrip().startswith("#")]


def test_setup_sh_installs_everything_with_the_constraints() -> None:
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "CONSTRAINTS=(-c constraints.txt)" in setup
    assert "BUILD_CONSTRAINTS=(--build-constraint constraints.txt)" in setup
    # A changed constraints file re-runs the install.
    (inputs,) = re.findall(r"python_inputs=\$\(cat ([^|]*)\|", re.sub(r"\\\n\s*", " ", setup))
    assert "constraints.txt" in inputs.split()
    installs = _setup_pip_installs()
    venv_installs = [line for line in installs if ".venv/bin/pip install" in line]
    # pip itself, torch, the packages with the test tools, the model's parts.
    assert len(venv_installs) == 4
    assert [line for line in venv_installs if '"${CONSTRAINTS[@]}"' not in line] == []
    # The install that builds the sdists pins their build back end too.
    (packages,) = [line for line in venv_installs if '"${editable[@]}"' in line]
    assert '"${BUILD_CONSTRAINTS[@]}"' in packages
    # checkov's own venv: its lock pins every distribution and is installed as it is, resolving nothing.
    (checkov,) = [line for line in installs if "checkov/bin/pip install" in line]
    assert "--no-deps" in shlex.split(checkov) and f"-r {CHECKOV_LOCK.relative_to(REPO)}" in checkov


@pytest.mark.parametrize(
    "dockerfile", [*sorted(d for d, module in DOCKERFILES.items() if module), "deploy/images/wheels.Dockerfile"]
)
def test_every_pip_install_of_the_images_uses_the_constraints(dockerfile: str) -> None:
    _, stages = parse_dockerfile(REPO / dockerfile)
    copied: set[str] = set()
    problems = []
    for stage in stages:
        for op, rest in stage.instructions:
            words = shlex.split(rest)
            if op == "COPY" and "constraints.txt" in words:
                destination = words[-1]
                copied.add(destination + "constraints.txt" if destination.endswith("/") else destination)
            for command in re.findall(r"pip (?:install|wheel)[^;&|]*", rest) if op == "RUN" else []:
                given = re.findall(r"-c (\S+)", command)
                if not given or not set(given) <= copied:
                    problems.append(
                        f"{command!r} does not constrain with the copied constraints.txt ({copied or 'none'})"
                    )
    assert copied and not problems, problems
    if dockerfile.startswith("services/"):
        # The service images build from the repository root: the file must be in that build context.
        assert not ignored("constraints.txt", _dockerignore())


def test_the_wheel_image_context_gets_the_constraints() -> None:
    """scripts/images.py writes the wheel image's context: constraints.txt goes in, and a changed file makes a
    new wheel image (its content is part of the image's tag)."""
    source = (REPO / "scripts" / "images.py").read_text()
    assert 'CONSTRAINTS = REPO / "constraints.txt"' in source
    body = source.split("def wheels_image", 1)[1].split("\ndef ", 1)[0]
    assert '(context / "constraints.txt").write_bytes(constraints)' in body
    assert "hashlib.sha256(" in body and "+ constraints)" in body


def test_the_checkov_venv_holds_exactly_its_lock() -> None:
    """checkov's virtualenv is separate (its pins clash with .venv's): its requirements file is its lock, installed
    with --no-deps, so it must name every distribution there, and each one's dependencies must be among them."""
    python = CHECKOV_VENV / "bin" / "python"
    assert python.exists(), "no checkov virtualenv: run make setup"
    lock = script.parse(CHECKOV_LOCK.read_text())
    venv = {key: value for key, value in script.installed(python).items() if key not in VENV_SEED}
    problems = script.venv_differences(lock, venv, fix=f"fix {CHECKOV_LOCK.relative_to(REPO)}")
    assert not problems, "\n".join(problems)
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
