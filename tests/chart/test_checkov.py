"""checkov over the chart's default render and a production install: every failure is fixed or on the list
below with its reason."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import CHART, MONITORING_API, REPO, Rendered, Renderer, load_values

# Installed by `make setup` into a virtualenv of its own (tests/chart/requirements-checkov.txt).
CHECKOV = REPO / ".local" / "tools" / "checkov" / "bin" / "checkov"

# Failures kept on purpose: check id -> (resources it may fail on, as "Kind.namespace.name" regexes; why).
NOT_FIXED: dict[str, tuple[list[str], str]] = {
    "CKV_K8S_43": (
        [r".*"],
        # Image should use a digest: the chart cannot know the digests of images built after it;
        # image.digest and <component>.image.digest pin them (set them in production values).
        "digests are a per-release value",
    ),
    "CKV_K8S_8": (
        [r"Pod\.stacgis\.demo-stacgis-test-.*"],
        # Liveness probe: `helm test` Pods run one curl and exit in seconds; a probe has nothing to watch.
        "one-shot helm test Pods",
    ),
    "CKV_K8S_9": ([r"Pod\.stacgis\.demo-stacgis-test-.*"], "one-shot helm test Pods (readiness, as above)"),
    "CKV_K8S_40": (
        [
            r"Deployment\.stacgis\.demo-stacgis-frontend",
            r"StatefulSet\.stacgis\.demo-stacgis-(postgresql|redis)",
        ],
        # High UID: the unprivileged nginx image (101) and the official Postgres and Redis images (999)
        # own their files and data directories as those users; another id needs images of our own.
        "upstream images own their files as a low UID",
    ),
}


def image_value_paths(values: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of every image block of values.yaml (a repository with a digest), so a new image is covered."""
    if "repository" in values and "digest" in values:
        return [path]
    return [
        p for key, value in values.items() if isinstance(value, dict) for p in image_value_paths(value, (*path, key))
    ]


def with_every_digest(values: dict[str, Any]) -> dict[str, Any]:
    """A production install: values plus a digest for every image (made up, but well formed)."""
    out = copy.deepcopy(values)
    for path in image_value_paths(yaml.safe_load((CHART / "values.yaml").read_text())):
        block = out
        for key in path:
            block = block.setdefault(key, {})
        block["digest"] = "sha256:" + hashlib.sha256(".".join(path).encode()).hexdigest()
    return out


def production(renderer: Renderer) -> Rendered:
    return renderer.render(with_every_digest(load_values("prod")), api_versions=(MONITORING_API,))


def run_checkov(rendered: Rendered, folder: Path) -> dict[str, Any]:
    assert CHECKOV.exists(), f"{CHECKOV} is missing: run `make setup` (it installs checkov offline from PyPI)"
    (folder / "render.yaml").write_text(yaml.safe_dump_all(rendered.clean(), sort_keys=False))
    result = subprocess.run(
        [str(CHECKOV), "-d", str(folder), "--framework", "kubernetes", "--skip-download", "--quiet", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # Exit status 1 means "some check failed"; anything else is checkov itself failing.
    assert result.returncode in (0, 1), result.stderr[-3000:]
    report = json.loads(result.stdout)
    return report[0] if isinstance(report, list) else report


@pytest.mark.parametrize("install", ["default", "production"])
def test_checkov_finds_nothing_beyond_the_explained_list(
    install: str, default: Rendered, renderer: Renderer, tmp_path: Path
) -> None:
    """The default render, and deploy/values-prod.yaml with every image digest set as a production
    install sets them: there no digest or pull-policy finding may remain."""
    rendered = default if install == "default" else production(renderer)
    allowed = dict(NOT_FIXED)
    if install == "production":
        del allowed["CKV_K8S_43"]
    report = run_checkov(rendered, tmp_path)
    summary = report["summary"]
    assert summary["parsing_errors"] == 0
    # Kubernetes objects were checked at all (a render checkov cannot read would pass vacuously).
    assert summary["resource_count"] > 50 and summary["passed"] > 1000
    failed = report["results"]["failed_checks"] if summary["failed"] else []
    unexplained = sorted(
        f"{f['check_id']} {f['check_name']}: {f['resource']}"
        for f in failed
        if not any(re.fullmatch(p, f["resource"]) for p in allowed.get(f["check_id"], ([], ""))[0])
    )
    assert not unexplained, "fix these or explain them in NOT_FIXED and docs/kubernetes.md:\n" + "\n".join(unexplained)
    counts = Counter(f["check_id"] for f in failed)
    print(f"checkov {install}: {summary['passed']} passed, {summary['failed']} failed (all in NOT_FIXED): {counts}")


def test_a_digest_pins_every_container_of_every_install(renderer: Renderer) -> None:
    for name in ("default", "dev", "prod"):
        rendered = renderer.render(with_every_digest(load_values(name)), api_versions=(MONITORING_API,))
        for doc, spec in rendered.workloads():
            for container in spec.get("containers", []) + spec.get("initContainers", []):
                assert re.search(r":[^/@]+@sha256:[0-9a-f]{64}$", container["image"]), (
                    f"{name}: {doc['kind']} {doc['metadata']['name']}/{container['name']}: {container['image']}"
                )


def test_every_workload_has_a_cpu_limit(default: Rendered) -> None:
    # Fixed checkov findings stay fixed even where checkov is not installed.
    for doc, spec in default.workloads():
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            limits = container.get("resources", {}).get("limits", {})
            assert "cpu" in limits, f"{doc['kind']} {doc['metadata']['name']}/{container['name']}: no CPU limit"
            assert container.get("imagePullPolicy") == "Always", f"{doc['metadata']['name']}/{container['name']}"
