"""Dockerfiles, skaffold.yaml and the chart agree, and the images are built the way the chart runs them."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import CHART, REPO, SERVICES, Rendered, Renderer

SERVICE_DIRS = {component: module for component, _, module, _ in SERVICES.values()}
DOCKERFILES = {f"services/{c}/Dockerfile": m for c, m in SERVICE_DIRS.items()}
DOCKERFILES["frontend/Dockerfile"] = ""
HADOLINT = Path(sys.executable).parent / "hadolint"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)


def parse_dockerfile(path: Path) -> tuple[dict[str, str], list[Stage]]:
    """ARG defaults before the first FROM, and the stages with their instructions."""
    text = re.sub(r"\\\n", " ", path.read_text())
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        op = op.upper()
        if op == "ARG" and not stages and "=" in rest:
            key, _, value = rest.partition("=")
            # A default may name an earlier ARG (BUILDER_IMAGE=${PYTHON_IMAGE}).
            args[key.strip()] = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], value.strip())
        elif op == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], parts[0])
            name = parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        elif stages:
            stages[-1].instructions.append((op, rest))
    return args, stages


@pytest.mark.parametrize("dockerfile", sorted(DOCKERFILES))
def test_hadolint_clean(dockerfile: str) -> None:
    result = subprocess.run(
        [str(HADOLINT), "--failure-threshold", "style", "--no-color", dockerfile],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr


BUILDER_DOCKERFILES = sorted(str(p.relative_to(REPO)) for p in REPO.glob("deploy/images/*.Dockerfile"))


@pytest.mark.parametrize("dockerfile", BUILDER_DOCKERFILES)
def test_hadolint_clean_builder_images(dockerfile: str) -> None:
    """The images scripts/images.py builds besides the services' (the shared wheel image)."""
    test_hadolint_clean(dockerfile)


def _dockerignore() -> list[tuple[bool, str]]:
    rules = []
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), line.lstrip("!").rstrip("/")))
    return rules


def ignored(path: str, rules: list[tuple[bool, str]]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a parent excludes the path."""
    parts = path.split("/")
    result = False
    for negate, pattern in rules:
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
            if re.fullmatch(regex, prefix):
                result = not negate
                break
    return result


def test_dockerignore_matcher() -> None:
    rules = _dockerignore()
    assert ignored("frontend/node_modules/react/index.js", rules)
    assert ignored("services/common/src/stacgis_common/__pycache__/x.pyc", rules)
    assert not ignored("services/common/pyproject.toml", rules)
    assert not ignored("frontend/package-lock.json", rules)


@pytest.mark.parametrize("dockerfile", sorted(DOCKERFILES))
def test_copy_sources_exist_in_the_build_context(dockerfile: str) -> None:
    _, stages = parse_dockerfile(REPO / dockerfile)
    stage_names = {s.name for s in stages}
    rules = _dockerignore()
    problems = []
    for stage in stages:
        for op, rest in stage.instructions:
            if op not in ("COPY", "ADD"):
                continue
            words = shlex.split(rest)
            from_stage = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
            sources = [w for w in words if not w.startswith("--")][:-1]
            if from_stage is not None:
                assert from_stage in stage_names or ":" in from_stage, f"{dockerfile}: unknown stage {from_stage}"
                continue
            for source in sources:
                path = REPO / source
                if not path.exists():
                    problems.append(f"{source} does not exist")
                elif ignored(source.rstrip("/"), rules):
                    problems.append(f"{source} is excluded by .dockerignore")
                for manifest in ("pyproject.toml", "package.json", "package-lock.json"):
                    inner = f"{source.rstrip('/')}/{manifest}"
                    if (REPO / inner).exists() and ignored(inner, rules):
                        problems.append(f"{inner} is excluded by .dockerignore")
    assert problems == []


BASE_RE = re.compile(r"^[\w./-]+:(?P<tag>[\w][\w.-]*)(@sha256:[a-f0-9]{64})?$")


@pytest.mark.parametrize("dockerfile", sorted(DOCKERFILES))
def test_images_are_multi_stage_pinned_and_non_root(dockerfile: str) -> None:
    _, stages = parse_dockerfile(REPO / dockerfile)
    names = {s.name for s in stages}
    assert len(stages) >= 2, "build and runtime stages"
    for stage in stages:
        if stage.base in names:
            continue
        match = BASE_RE.match(stage.base)
        assert match and match["tag"] != "latest", f"unpinned base {stage.base}"
    final = stages[-1]
    ops = [op for op, _ in final.instructions]
    user = [rest for op, rest in final.instructions if op == "USER"]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    run_lines = " ".join(rest for op, rest in final.instructions if op == "RUN")
    assert not re.search(r"\b(gcc|g\+\+|build-essential|make|apt-get install)\b", run_lines), "tools in runtime"
    module = DOCKERFILES[dockerfile]
    if module:
        assert final.base.startswith("python:3.11")
        assert "useradd" in run_lines and "--uid 10001" in run_lines
        assert user[-1] == "10001:10001"
        (cmd,) = [rest for op, rest in final.instructions if op == "CMD"]
        assert yaml.safe_load(cmd) == ["python", "-m", module]
        copies = [rest for op, rest in final.instructions if op == "COPY"]
        assert any("--from=builder /opt/venv /opt/venv" in c for c in copies)
        builder = next(s for s in stages if s.name == "builder")
        (install,) = [rest for op, rest in builder.instructions if op == "RUN" and "pip install" in rest]
        assert "/src/services/common" in install and f"/src/services/{dockerfile.split('/')[1]}" in install
    else:
        assert final.base.startswith("nginxinc/nginx-unprivileged:")
        assert "EXPOSE" in ops and user[-1] == "101"


def debian_packages() -> list[tuple[str, str]]:
    """(where, package spec) of every Debian package an image installs: the bases scripts/images.py makes
    with mmdebstrap, and each Dockerfile's apt-get install."""
    spec = importlib.util.spec_from_file_location("stacgis_images_script", REPO / "scripts" / "images.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up while being defined.
    sys.modules[spec.name] = script
    spec.loader.exec_module(script)
    found = [("python base", p) for p in script.PYTHON_PACKAGES] + [("nginx base", p) for p in script.NGINX_PACKAGES]
    for dockerfile in [*DOCKERFILES, "deploy/images/wheels.Dockerfile"]:
        _, stages = parse_dockerfile(REPO / dockerfile)
        for stage in stages:
            for op, rest in stage.instructions:
                for command in re.findall(r"apt-get install ([^;&|]*)", rest) if op == "RUN" else []:
                    found += [(dockerfile, word) for word in command.split() if not word.startswith("-")]
    return found


def test_debian_packages_are_pinned_to_what_bookworm_holds() -> None:
    """Each one names a version, and Debian 12's archive (this host's apt sources: bookworm and its
    security and updates suites, as mmdebstrap uses) still has it; a security update that replaced it
    fails here with the version to pin."""
    packages = debian_packages()
    assert len(packages) >= 8, packages
    release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    assert "VERSION_CODENAME=bookworm" in release and shutil.which("apt-cache"), "needs a Debian 12 host"
    names = sorted({package.partition("=")[0] for _, package in packages})
    madison = subprocess.run(["apt-cache", "madison", *names], capture_output=True, text=True, check=False).stdout
    rows = [[cell.strip() for cell in line.split("|")] for line in madison.splitlines() if "bookworm" in line]
    problems = []
    for where, package in packages:
        name, equals, version = package.partition("=")
        if not equals:
            problems.append(f"{where}: {name} has no version")
            continue
        held = {row[1] for row in rows if row[0] == name}
        if version not in held:
            problems.append(f"{where}: {name}={version} is gone; bookworm has {sorted(held) or 'none'}")
    assert not problems, "\n".join(problems)


def test_raster_image_uses_the_wheel_gdal() -> None:
    _, stages = parse_dockerfile(REPO / "services/raster-tools/Dockerfile")
    text = " ".join(rest for s in stages for _, rest in s.instructions)
    assert "gdal" not in text.lower().replace("gdal that", "")
    final = stages[-1]
    assert ("COPY", "--from=demo-packages /opt/demo-cache/packages /opt/stacgis/demo-packages") in final.instructions


def _modules_in_jobs(rendered: Rendered) -> set[str]:
    found = set()
    for _doc, spec in rendered.workloads():
        for c in spec["containers"]:
            words = " ".join(c.get("command", []) + c.get("args", []))
            found |= set(re.findall(r"python -m ([\w.]+)", words))
    return found


def test_entrypoint_modules_exist_in_the_services(renderer: Renderer) -> None:
    """Every `python -m` module the images and Jobs run resolves to a file under services/*/src."""
    modules = {m for m in DOCKERFILES.values() if m}
    for values_set in ("default", "prod", "dev"):
        modules |= _modules_in_jobs(renderer.values_set(values_set))
    src_roots = sorted(REPO.glob("services/*/src"))
    missing = []
    for module in sorted(modules):
        parts = module.split(".")
        candidates = []
        for root in src_roots:
            base = root.joinpath(*parts)
            candidates += [base / "__main__.py", base.with_suffix(".py")]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            missing.append(module)
            continue
        compile(found.read_text(), str(found), "exec")
    assert missing == [], f"entry modules not found under services/*/src: {', '.join(missing)}"
    # Importable in the project environment, from the repository's own tree.
    probe = (
        "import importlib.util, sys\n"
        "for m in sys.argv[1:]:\n"
        "    spec = importlib.util.find_spec(m)\n"
        "    print(m, spec.origin if spec else None)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, *sorted(modules)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    for line in result.stdout.splitlines():
        module, origin = line.split(" ", 1)
        assert origin != "None" and str(REPO / "services") in origin, f"{module} resolves to {origin}"


# -- skaffold ---------------------------------------------------------------------------------

SKAFFOLD = yaml.safe_load((REPO / "skaffold.yaml").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())


def _value_path_exists(dotted: str) -> bool:
    node: Any = VALUES
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def test_skaffold_builds_every_image_from_the_repo_root() -> None:
    artifacts = {a["image"]: a for a in SKAFFOLD["build"]["artifacts"]}
    dockerfiles = [*REPO.glob("services/*/Dockerfile"), REPO / "frontend/Dockerfile"]
    on_disk = sorted(str(p.relative_to(REPO)) for p in dockerfiles)
    assert sorted(a["docker"]["dockerfile"] for a in artifacts.values()) == on_disk
    assert set(DOCKERFILES) <= set(on_disk)
    for _image, artifact in artifacts.items():
        assert artifact["context"] == "."
        assert (REPO / artifact["docker"]["dockerfile"]).is_file()


def test_skaffold_sets_the_images_the_chart_uses() -> None:
    (release,) = SKAFFOLD["deploy"]["helm"]["releases"]
    assert (REPO / release["chartPath"]).resolve() == CHART
    assert all((REPO / f).is_file() for f in release["valuesFiles"])
    templates = release["setValueTemplates"]
    images = {a["image"] for a in SKAFFOLD["build"]["artifacts"]}
    repositories: dict[str, set[str]] = {}
    for key, value in templates.items():
        assert _value_path_exists(key), key
        var = re.fullmatch(r"\{\{\.IMAGE_(REPO|TAG)_(\w+)\}\}", value)
        assert var, value
        repositories.setdefault(key.rsplit(".", 2)[0], set()).add(var.group(2))
    # Each chart image block is fed by exactly one artifact, and its default repository is that artifact.
    for block, variables in repositories.items():
        (variable,) = variables
        image = next(i for i in images if re.sub(r"[^A-Za-z0-9]", "_", i) == variable)
        assert VALUES[block]["image"]["repository"] == image
    assert len(repositories) == len(images)


def test_skaffold_profiles_and_port_forward(renderer: Renderer) -> None:
    profiles = {p["name"]: p for p in SKAFFOLD["profiles"]}
    assert set(profiles) == {"gpu", "prod"}
    for profile in profiles.values():
        for patch in profile.get("patches", []):
            assert patch["path"].startswith("/deploy/helm/releases/0/")
            if patch["path"].endswith("/setValues"):
                assert all(_value_path_exists(k) for k in patch["value"])
            if patch["path"].endswith("/valuesFiles"):
                assert all((REPO / f).is_file() for f in patch["value"])
    gpu_values = yaml.safe_load((REPO / "deploy/values-dev.yaml").read_text())
    for key, value in profiles["gpu"]["patches"][0]["value"].items():
        node = gpu_values
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    ollama = renderer.render(gpu_values).get("Deployment", "demo-stacgis-ollama")
    assert "nvidia.com/gpu" in ollama["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    (forward,) = SKAFFOLD["portForward"]
    assert forward["resourceName"] == "ingress-nginx-controller" and forward["localPort"] == 8080


# -- frontend nginx ---------------------------------------------------------------------------


@pytest.fixture
def nginx(tmp_path: Path) -> Any:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        pytest.skip("nginx (Debian package nginx) is not installed")
    from stacgis_common.testing import free_port

    port = free_port()
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>stacgis</title>")
    (dist / "assets" / "index-3f9a1c.js").write_text("console.log('stacgis');" * 100)
    (dist / "favicon.svg").write_text("<svg/>")
    server = (REPO / "frontend/nginx.conf").read_text()
    server = server.replace("listen 8080;", f"listen 127.0.0.1:{port};").replace("/usr/share/nginx/html", str(dist))
    # Where the Dockerfile copies it (and the chart mounts its own).
    server = server.replace("/etc/nginx/stacgis/csp.conf", str(REPO / "frontend/csp.conf"))
    (tmp_path / "server.conf").write_text(server)
    # The main config the nginx-unprivileged image ships, reduced to what the server block needs.
    # Run as root (CI), nginx would drop its workers to "nobody", who cannot read tmp_path.
    user = "user root;" if os.geteuid() == 0 else ""
    (tmp_path / "nginx.conf").write_text(f"""
        {user} daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;
        events {{}}
        http {{
          include /etc/nginx/mime.types; default_type application/octet-stream;
          access_log off;
          client_body_temp_path {tmp_path}/body; proxy_temp_path {tmp_path}/proxy;
          fastcgi_temp_path {tmp_path}/fastcgi; uwsgi_temp_path {tmp_path}/uwsgi; scgi_temp_path {tmp_path}/scgi;
          include {tmp_path}/server.conf;
        }}""")
    check = subprocess.run(
        [binary, "-t", "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([binary, "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "error.log")])
    import httpx

    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(base + "/healthz", timeout=0.2)
            break
        except httpx.TransportError:
            import time

            time.sleep(0.05)
    yield base
    proc.terminate()
    proc.wait(timeout=5)


def test_frontend_server_routes(nginx: str) -> None:
    import httpx

    with httpx.Client(base_url=nginx) as client:
        assert client.get("/healthz").text == "ok\n"
        assert client.get("/readyz").status_code == 200
        index = client.get("/")
        assert index.status_code == 200 and "stacgis" in index.text
        assert index.headers["cache-control"] == "no-cache"
        # Client-side routes fall back to the app, uncached.
        deep = client.get("/sessions/abc")
        assert deep.status_code == 200 and deep.text == index.text
        assert deep.headers["cache-control"] == "no-cache"
        asset = client.get("/assets/index-3f9a1c.js", headers={"Accept-Encoding": "gzip"})
        assert asset.status_code == 200
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert asset.headers.get("content-encoding") == "gzip"
        assert "javascript" in asset.headers["content-type"]
        # A stale hashed asset is a 404, never index.html served as JavaScript.
        assert client.get("/assets/index-000000.js").status_code == 404
        assert client.get("/api/v1/chat/capacity").status_code == 404
        assert client.get("/tiles/x/0/0/0.png").status_code == 404
        assert index.headers["x-content-type-options"] == "nosniff"
        for page in (index, deep, client.get("/index.html")):
            assert "script-src 'self'" in page.headers["content-security-policy"]


def _package_data_patterns(pyproject: Path) -> dict[str, list[str]]:
    import tomllib

    config = tomllib.loads(pyproject.read_text())
    setuptools_cfg = config.get("tool", {}).get("setuptools", {})
    patterns: dict[str, list[str]] = setuptools_cfg.get("package-data", {})
    return patterns


@pytest.mark.parametrize("service", sorted(p.name for p in REPO.glob("services/*") if (p / "Dockerfile").exists()))
def test_data_files_ship_in_the_wheel(service: str) -> None:
    """Images install the services as wheels (not editable): files that are not Python,
    such as SQL migrations, are only there when package-data names them."""
    root = REPO / "services" / service
    if not (root / "pyproject.toml").exists():
        pytest.fail(f"services/{service} has a Dockerfile but no pyproject.toml yet")
    patterns = _package_data_patterns(root / "pyproject.toml")
    missing = []
    for package_dir in sorted((root / "src").glob("stacgis_*")):
        if not package_dir.is_dir() or package_dir.suffix == ".egg-info":
            continue
        wanted = patterns.get(package_dir.name, []) + patterns.get("*", [])
        for path in package_dir.rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            if path.name == "py.typed":
                continue
            relative = path.relative_to(package_dir).as_posix()
            if not any(fnmatchcase(relative, p) or fnmatchcase(relative, p.replace("**/", "")) for p in wanted):
                missing.append(f"{package_dir.name}/{relative}")
    assert missing == [], f"add to [tool.setuptools.package-data] in services/{service}/pyproject.toml: {missing}"
