#!/usr/bin/env python3
"""Build every container image of the product with podman: `make images` (docs/images.md).

    scripts/images.py build [--base auto|debian|official] [--only NAME ...] [--no-cache]
    scripts/images.py list
    scripts/images.py check    exit 1 naming what is missing when the engine is not installed

Where no container registry answers (`--base auto` tries one), the bases are made here from Debian
packages with mmdebstrap and imported into podman, each once (an existing one is kept):
  localhost/stacgis-python:3.11-bookworm   python3, python3-venv, ca-certificates (+ passwd: useradd), pinned
  localhost/stacgis-nginx:bookworm-<hash>  nginx-light with deploy/images/nginx.conf (non-root, /tmp), pinned
Then the wheel image (deploy/images/wheels.Dockerfile: a wheel of every third-party requirement of
every service at the versions of constraints.txt, built once per requirement and constraint set)
becomes each service Dockerfile's BUILDER_IMAGE, so each service's own layer installs offline in
seconds; the service's builder stage installs with the same constraints.txt. The frontend's dist is
built on the host (`npm run build`) and handed to frontend/Dockerfile as DIST_STAGE when no Node
image can be pulled.

Images are tagged stacgis/<name>:<chart appVersion> and stacgis/<name>:<git revision>, labelled with
org.opencontainers.image.version and .revision. What was built (image, id, size, seconds) goes to
.local/images/built.json, which tests/images reads. Nothing is installed: without podman and
mmdebstrap this says which apt command (or `make images-setup`) installs them and exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heartbeat
from image_engine import APT_COMMAND, PODMAN, REQUIRED_BINARIES, ULIMITS

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".local" / "images"
BUILT = WORK / "built.json"
IMAGES_DIR = REPO / "deploy" / "images"
# The exact version of every distribution, as tested (scripts/constraints.py): the wheel image and
# every service's builder stage install with it.
CONSTRAINTS = REPO / "constraints.txt"

SUITE = "bookworm"
PYTHON_BASE = "localhost/stacgis-python:3.11-bookworm"
# The bases' Debian packages, pinned to what bookworm with its security and updates suites (mmdebstrap
# adds both for a stable release) holds now; `apt-cache policy <package>` on a Debian 12 host shows it.
# Debian keeps only the newest version of a package per suite, so a security update removes a pinned
# one: the build then stops naming it, and tests/chart/test_images.py names the version to pin. Their
# dependencies and the minbase essentials are the mirror's of the day (pinning those too would need
# snapshot.debian.org, which these machines cannot reach).
# passwd brings useradd/groupadd, which the service Dockerfiles run; minbase has neither.
PYTHON_PACKAGES = (
    "python3=3.11.2-1+b1",
    "python3-venv=3.11.2-1+b1",
    "python-is-python3=3.11.2-1+deb12u1",
    "ca-certificates=20250419~deb12u2",
    "passwd=1:4.13+dfsg1-1+deb12u2",
)
NGINX_PACKAGES = ("nginx-light=1.22.1-9+deb12u12", "ca-certificates=20250419~deb12u2")
# The official bases the Dockerfiles default to; pulling the first one tells whether a registry answers.
OFFICIAL_PYTHON = "docker.io/library/python:3.11.11-slim-bookworm"
WHEELS_REPOSITORY = "localhost/stacgis-wheels"
DIST_REPOSITORY = "localhost/stacgis-frontend-dist"
# pip, npm and apt inside a build reach their registries with the host's configuration (read-only).
HOST_CONFIG = ("/etc/pip.conf", "/etc/npmrc", "/etc/ssl/certs/ca-certificates.crt")
LOCAL_PACKAGE_PREFIX = "stacgis-"
# A base made here remembers its package list: a changed list makes it again.
PACKAGES_LABEL = "org.stacgis.debian-packages"


def say(text: str) -> None:
    print(f"[images] {text}", flush=True)


@dataclass(frozen=True)
class Image:
    name: str  # stacgis/<name>
    dockerfile: Path
    python: bool  # a Python service (the frontend is not)


@dataclass
class Built:
    name: str
    reference: str
    image_id: str
    size_bytes: int
    seconds: float
    cached: bool


def images() -> list[Image]:
    found = [Image(path.parent.name, path, True) for path in sorted((REPO / "services").glob("*/Dockerfile"))]
    found.append(Image("frontend", REPO / "frontend" / "Dockerfile", False))
    return found


def app_version() -> str:
    match = re.search(r'^appVersion:\s*"?([^"\s]+)"?', (REPO / "charts/stacgis/Chart.yaml").read_text(), re.M)
    return match.group(1) if match else "0.0.0"


def git_revision() -> str:
    """HEAD's commit, with `-dirty` when tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=REPO, check=False).returncode != 0
    return head.stdout.strip() + ("-dirty" if dirty else "")


def reference(name: str, tag: str | None = None) -> str:
    return f"localhost/stacgis/{name}:{tag or app_version()}"


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, check=check)


def image_exists(ref: str) -> bool:
    return podman("image", "exists", ref, check=False).returncode == 0


def image_label(ref: str, label: str) -> str:
    return podman("image", "inspect", "--format", f'{{{{index .Labels "{label}"}}}}', ref).stdout.strip()


def image_facts(ref: str) -> tuple[str, int]:
    out = podman("image", "inspect", "--format", "{{.Id}} {{.Size}}", ref).stdout.split()
    return out[0], int(out[1])


def run_step(label: str, command: Sequence[str], cwd: Path = REPO) -> float:
    """Run a long step with a progress line every 30 s; seconds it took. Exits on failure."""
    started = time.monotonic()
    # Only podman's step lines and errors go through: its pip output is thousands of lines.
    code = heartbeat.run(command, label, prefix="[images]", show=r"STEP \d+/\d+|^Error|ERROR|error:", cwd=cwd)
    if code != 0:
        raise SystemExit(f"[images] {label} failed (exit status {code})")
    return time.monotonic() - started


def check_engine() -> None:
    missing = [tool for tool in REQUIRED_BINARIES if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"[images] {', '.join(missing)} not found: building images needs podman and mmdebstrap.\n"
            f"[images] install them as root with:\n    {APT_COMMAND}\n"
            f"[images] (or `make images-setup`, which runs scripts/setup.sh with STACGIS_SETUP_IMAGES=1)"
        )


def registry_reachable() -> bool:
    """True when the official Python base is here or can be pulled (a registry answers)."""
    if image_exists(OFFICIAL_PYTHON):
        return True
    say(f"checking for a container registry (pulling {OFFICIAL_PYTHON})")
    try:
        pulled = subprocess.run([*PODMAN, "pull", "--quiet", OFFICIAL_PYTHON], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return pulled.returncode == 0


def mmdebstrap_base(ref: str, packages: Sequence[str], changes: Sequence[str], hooks: Sequence[str]) -> float:
    """Make `ref` from Debian packages unless it exists; seconds spent (0 when kept)."""
    wanted = ",".join(packages)
    if image_exists(ref) and image_label(ref, PACKAGES_LABEL) == wanted:
        say(f"{ref}: present, kept")
        return 0.0
    WORK.mkdir(parents=True, exist_ok=True)
    tarball = WORK / (re.sub(r"[^A-Za-z0-9]+", "-", ref) + ".tar")
    command = ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages)]
    command += [f"--customize-hook={hook}" for hook in hooks]
    command += [SUITE, str(tarball)]
    seconds = run_step(f"{ref}: root filesystem from Debian packages (mmdebstrap)", command)
    changes = [*changes, f"LABEL {PACKAGES_LABEL}={wanted}"]
    imported = ["import", *(f"--change={change}" for change in changes), str(tarball), ref]
    seconds += run_step(f"{ref}: podman import", [*PODMAN, *imported])
    tarball.unlink()
    return seconds


def python_base() -> float:
    return mmdebstrap_base(PYTHON_BASE, PYTHON_PACKAGES, ['CMD ["python3"]'], [])


def nginx_base_reference() -> str:
    digest = hashlib.sha256((IMAGES_DIR / "nginx.conf").read_bytes() + " ".join(NGINX_PACKAGES).encode())
    return f"localhost/stacgis-nginx:{SUITE}-{digest.hexdigest()[:12]}"


def nginx_base() -> tuple[str, float]:
    ref = nginx_base_reference()
    hooks = [
        f"copy-in {IMAGES_DIR / 'nginx.conf'} /etc/nginx",
        # The default site listens on 80 (root only); the compiled-in log paths are not writable.
        'rm -f "$1/etc/nginx/sites-enabled/default"'
        ' && ln -sf /dev/stderr "$1/var/log/nginx/error.log" && ln -sf /dev/stdout "$1/var/log/nginx/access.log"',
    ]
    changes = ['CMD ["nginx", "-g", "daemon off;"]', "STOPSIGNAL SIGQUIT", "USER 101", "EXPOSE 8080"]
    return ref, mmdebstrap_base(ref, NGINX_PACKAGES, changes, hooks)


def requirements() -> list[str]:
    """Every third-party requirement of every service, as pinned in its pyproject.toml, sorted."""
    wanted: set[str] = set()
    for pyproject in [*(REPO / "services").glob("*/pyproject.toml"), REPO / "proto/python/pyproject.toml"]:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        for requirement in project.get("dependencies", []):
            if not requirement.lower().startswith(LOCAL_PACKAGE_PREFIX):
                wanted.add(requirement)
        build = tomllib.loads(pyproject.read_text()).get("build-system", {})
        # The services build offline from these wheels too: their build back end must be among them.
        wanted.update(build.get("requires", []))
    return sorted(wanted, key=str.lower)


def wheels_image(python_image: str) -> tuple[str, float]:
    lines = requirements()
    constraints = CONSTRAINTS.read_bytes()
    base_id = image_facts(python_image)[0]
    digest = hashlib.sha256("\n".join([base_id, *lines]).encode() + constraints)
    digest.update((IMAGES_DIR / "wheels.Dockerfile").read_bytes())
    ref = f"{WHEELS_REPOSITORY}:{digest.hexdigest()[:12]}"
    if image_exists(ref):
        say(f"{ref}: present, kept")
        return ref, 0.0
    context = WORK / "wheels-context"
    shutil.rmtree(context, ignore_errors=True)
    context.mkdir(parents=True)
    (context / "requirements.txt").write_text("\n".join(lines) + "\n")
    (context / "constraints.txt").write_bytes(constraints)
    command = [*PODMAN, "build", *build_flags(), "--build-arg", f"PYTHON_IMAGE={python_image}"]
    command += ["-f", str(IMAGES_DIR / "wheels.Dockerfile"), "-t", ref, str(context)]
    say(f"{ref}: a wheel of each of the {len(lines)} third-party requirements (once per requirement set)")
    return ref, run_step(f"{ref}: building", command)


def build_flags() -> list[str]:
    # The host network: no bridge or iptables needed.
    flags = [*ULIMITS, "--network", "host", "--layers"]
    for path in HOST_CONFIG:
        if Path(path).is_file():
            flags += ["-v", f"{path}:{path}:ro"]
    return flags


def stale(index: Path, frontend: Path) -> bool:
    """True when the build is missing or older than a source file (as `make up` decides)."""
    if not index.exists():
        return True
    sources = [frontend / name for name in ("index.html", "package.json", "package-lock.json", "vite.config.ts")]
    for folder in ("src", "public"):
        sources.extend(path for path in (frontend / folder).rglob("*") if path.is_file())
    newest = max((path.stat().st_mtime for path in sources if path.exists()), default=0.0)
    return index.stat().st_mtime < newest


def frontend_dist() -> tuple[str, float]:
    """An image holding frontend/dist (built on the host) at /src/frontend/dist; seconds spent."""
    frontend = REPO / "frontend"
    started = time.monotonic()
    if not (frontend / "node_modules").is_dir():
        run_step("frontend: npm ci", ["npm", "ci", "--no-audit", "--no-fund"], cwd=frontend)
    dist = frontend / "dist"
    if stale(dist / "index.html", frontend):
        run_step("frontend: npm run build", ["npm", "run", "build", "--silent"], cwd=frontend)
    else:
        say("frontend: frontend/dist is newer than its sources, kept")
    digest = hashlib.sha256()
    for path in sorted(p for p in dist.rglob("*") if p.is_file()):
        digest.update(path.relative_to(dist).as_posix().encode() + b"\0" + path.read_bytes())
    ref = f"{DIST_REPOSITORY}:{digest.hexdigest()[:12]}"
    if not image_exists(ref):
        containerfile = WORK / "frontend-dist.Containerfile"
        WORK.mkdir(parents=True, exist_ok=True)
        containerfile.write_text("FROM scratch\nCOPY . /src/frontend/dist\n")
        run_step(f"{ref}: building", [*PODMAN, "build", *ULIMITS, "-f", str(containerfile), "-t", ref, str(dist)])
    return ref, time.monotonic() - started


def image_tags(name: str, revision: str) -> list[str]:
    """The version's tag (the one the chart and the tests use) and the revision's."""
    return [reference(name), reference(name, revision.replace("-dirty", "")[:12])]


def build_image(image: Image, build_args: dict[str, str], revision: str, no_cache: bool) -> Built:
    version = app_version()
    tags = image_tags(image.name, revision)
    ref = tags[0]
    before = image_facts(ref)[0] if image_exists(ref) else None
    command = [*PODMAN, "build", *build_flags(), "-f", str(image.dockerfile.relative_to(REPO))]
    for key, value in build_args.items():
        command += ["--build-arg", f"{key}={value}"]
    labels = {
        "org.opencontainers.image.title": f"stacgis {image.name}",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
    }
    for key, value in labels.items():
        command += ["--label", f"{key}={value}"]
    for tag in tags:
        command += ["-t", tag]
    if no_cache:
        command.append("--no-cache")
    command.append(".")
    seconds = run_step(f"stacgis/{image.name}: building", command)
    image_id, size = image_facts(ref)
    say(f"stacgis/{image.name}: {size / 1e6:.0f} MB in {heartbeat.elapsed(seconds)}")
    return Built(image.name, ref, image_id, size, round(seconds, 1), image_id == before)


def build(base: str, only: Sequence[str], no_cache: bool) -> list[Built]:
    check_engine()
    chosen = [image for image in images() if not only or image.name in only]
    unknown = set(only) - {image.name for image in images()}
    if unknown:
        raise SystemExit(f"[images] no such image: {', '.join(sorted(unknown))}")
    official = base == "official" or (base == "auto" and registry_reachable())
    say("bases: the official images (a registry answers)" if official else "bases: made here from Debian packages")
    revision = git_revision()
    timings: dict[str, float] = {}
    python_args: dict[str, str] = {}
    frontend_args: dict[str, str] = {}
    if official:
        python_image = OFFICIAL_PYTHON
    else:
        timings["python-base"] = python_base()
        python_image = PYTHON_BASE
        python_args["PYTHON_IMAGE"] = python_image
    if any(image.python for image in chosen):
        wheels, timings["wheels"] = wheels_image(python_image)
        python_args["BUILDER_IMAGE"] = wheels
    if not official and any(not image.python for image in chosen):
        nginx, timings["nginx-base"] = nginx_base()
        dist, timings["frontend-dist"] = frontend_dist()
        frontend_args = {"NGINX_IMAGE": nginx, "DIST_STAGE": dist}
    results = [
        build_image(image, python_args if image.python else frontend_args, revision, no_cache) for image in chosen
    ]
    record(results, timings, revision)
    # Kept beside this run's bases and tags: every image's version tag and the Debian bases, which a
    # build with `--only` or `--base official` did not use but the chart, the tests and the next build do.
    bases = [python_image, python_args.get("BUILDER_IMAGE", ""), *frontend_args.values()]
    bases += [PYTHON_BASE, nginx_base_reference(), *(reference(image.name) for image in images())]
    prune_replaced({*bases, *(tag for result in results for tag in image_tags(result.name, revision))})
    return results


# A rebuild leaves the image it replaced behind (about 300 MB per changed service), under an older
# revision's tag or none. Those older than PRUNE_AFTER are removed, so that `make test` on every
# commit does not fill the disk; a day's margin keeps what a build running beside this one may use.
PRUNE_AFTER = "24h"
OWN_PREFIXES = ("localhost/stacgis/", "localhost/stacgis-")


def prune_replaced(keep: Collection[str], prefixes: tuple[str, ...] = OWN_PREFIXES) -> None:
    """Remove the images named with `prefixes` (this project's) older than PRUNE_AFTER but those in
    `keep`, then untagged ones."""
    listed = podman("images", "--filter", f"until={PRUNE_AFTER}", "--format", "{{.Repository}}:{{.Tag}}")
    stale = [ref for ref in listed.stdout.split() if ref.startswith(prefixes) and ref not in keep]
    if stale:  # an image with another tag only loses this one; one in use by a container stays
        podman("rmi", *stale, check=False)
    pruned = podman("image", "prune", "--force", "--filter", f"until={PRUNE_AFTER}", check=False)
    say(f"removed {len(stale)} older tags and {len(pruned.stdout.split())} untagged images (> {PRUNE_AFTER} old)")


def record(results: Sequence[Built], timings: dict[str, float], revision: str) -> None:
    """Merge this run into built.json (images built earlier and not now are kept) and print a table."""
    previous: dict[str, dict[str, object]] = {}
    if BUILT.exists():
        previous = json.loads(BUILT.read_text()).get("images", {})
    merged = {**previous, **{result.name: asdict(result) for result in results}}
    WORK.mkdir(parents=True, exist_ok=True)
    body = {"revision": revision, "version": app_version(), "images": merged, "steps_seconds": timings}
    BUILT.write_text(json.dumps(body, indent=2) + "\n")
    for step, seconds in timings.items():
        say(f"{step:<20} {'kept' if seconds == 0 else heartbeat.elapsed(seconds)}")
    for result in results:
        state = "unchanged" if result.cached else "built"
        size = f"{result.size_bytes / 1e6:.0f} MB"
        say(f"{result.reference:<48} {size:>8} {heartbeat.elapsed(result.seconds):>12}  {state}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build the images")
    build_parser.add_argument("--base", choices=("auto", "debian", "official"), default="auto")
    build_parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="e.g. vector-tools frontend")
    build_parser.add_argument("--no-cache", action="store_true", help="rebuild every layer of the service images")
    commands.add_parser("list", help="the images and their references")
    commands.add_parser("check", help="exit 1 naming what is missing when podman or mmdebstrap is not installed")
    args = parser.parse_args(argv)
    if args.command == "list":
        for image in images():
            print(f"{image.name:<20} {reference(image.name)}  ({image.dockerfile.relative_to(REPO)})")
        return 0
    if args.command == "check":
        check_engine()
        return 0
    os.chdir(REPO)
    build(args.base, args.only, args.no_cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
