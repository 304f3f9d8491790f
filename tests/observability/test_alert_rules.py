"""The alert rules shipped in the chart: valid, unit-tested with promtool, every alert both fires and stays quiet.

Needs only promtool (Debian package `prometheus`), not the running product.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacgis_observability.inspect import alert_rules

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "charts" / "stacgis" / "rules"
TESTS = Path(__file__).resolve().parent / "promtool"
RUNBOOKS = ROOT / "docs" / "runbooks.md"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def rule_files() -> list[Path]:
    return sorted(RULES.glob("*.yaml"))


def promtool_test_files() -> list[Path]:
    return sorted(TESTS.glob("*.test.yaml"))


def all_alerts() -> dict[str, dict[str, Any]]:
    alerts: dict[str, dict[str, Any]] = {}
    for path in rule_files():
        for rule in alert_rules(yaml.safe_load(path.read_text())):
            assert rule["alert"] not in alerts, f"alert {rule['alert']} is defined twice"
            alerts[rule["alert"]] = rule
    return alerts


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_rule_files_are_valid() -> None:
    result = promtool("check", "rules", *map(str, rule_files()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", *map(str, promtool_test_files()))
    assert result.returncode == 0, result.stdout + result.stderr


def minutes(duration: str) -> float:
    value, unit = float(duration[:-1]), duration[-1]
    return value * {"s": 1 / 60, "m": 1, "h": 60}[unit]


def evaluations(alert: str) -> list[dict[str, Any]]:
    found = []
    for path in promtool_test_files():
        for case in yaml.safe_load(path.read_text())["tests"]:
            found += [check for check in case.get("alert_rule_test", []) if check["alertname"] == alert]
    return found


def is_firing_check(check: dict[str, Any]) -> bool:
    return bool(check.get("exp_alerts"))


def is_quiet_check(alert: str) -> Callable[[dict[str, Any]], bool]:
    """Quiet checks that count: evaluated well after the alert's `for`, so "pending" is not taken for quiet."""
    hold = minutes(all_alerts()[alert]["for"])
    return lambda check: check.get("exp_alerts") == [] and minutes(check["eval_time"]) >= hold + 5


@pytest.mark.parametrize("alert", sorted(all_alerts()))
def test_every_alert_has_a_firing_and_a_quiet_case(alert: str) -> None:
    checks = evaluations(alert)
    assert any(map(is_firing_check, checks)), f"no promtool test expects {alert} to fire"
    assert any(map(is_quiet_check(alert), checks)), (
        f"no promtool test expects {alert} to stay quiet at least 5 minutes after its `for`"
    )


def run_tests_against(
    tmp_path: Path, alert: str, expr: str | None, keep: Callable[[dict[str, Any]], bool]
) -> subprocess.CompletedProcess[str]:
    """Run the promtool checks of `alert` selected by `keep`, with its expression replaced by `expr`
    ("ORIGINAL" stands for the shipped expression; None keeps it)."""
    rules_dir = tmp_path / "charts" / "stacgis" / "rules"
    rules_dir.mkdir(parents=True)
    for path in rule_files():
        document = yaml.safe_load(path.read_text())
        for rule in alert_rules(document):
            if rule["alert"] == alert and expr is not None:
                rule["expr"] = expr.replace("ORIGINAL", rule["expr"])
        (rules_dir / path.name).write_text(yaml.safe_dump(document, sort_keys=False))
    tests_dir = tmp_path / "tests" / "observability" / "promtool"
    tests_dir.mkdir(parents=True)
    kept = 0
    for path in promtool_test_files():
        document = yaml.safe_load(path.read_text())
        cases = []
        for case in document["tests"]:
            checks = [c for c in case.get("alert_rule_test", []) if c["alertname"] == alert and keep(c)]
            if checks:
                cases.append({**case, "alert_rule_test": checks})
        kept += sum(len(case["alert_rule_test"]) for case in cases)
        document["tests"] = cases
        (tests_dir / path.name).write_text(yaml.safe_dump(document, sort_keys=False))
    assert kept, f"no promtool checks of {alert} selected"
    return promtool("test", "rules", *[str(tests_dir / p.name) for p in promtool_test_files()])


@pytest.mark.parametrize("alert", sorted(all_alerts()))
def test_the_firing_checks_catch_a_rule_that_never_fires(alert: str, tmp_path: Path) -> None:
    assert run_tests_against(tmp_path / "as-shipped", alert, None, is_firing_check).returncode == 0
    result = run_tests_against(tmp_path / "mutated", alert, "vector(1) > 2", is_firing_check)
    assert result.returncode != 0, f"the promtool tests still pass when {alert} can never fire"


@pytest.mark.parametrize("alert", sorted(all_alerts()))
def test_the_quiet_checks_catch_a_rule_that_always_fires(alert: str, tmp_path: Path) -> None:
    quiet = is_quiet_check(alert)
    assert run_tests_against(tmp_path / "as-shipped", alert, None, quiet).returncode == 0
    result = run_tests_against(tmp_path / "mutated", alert, "(ORIGINAL) or vector(1)", quiet)
    assert result.returncode != 0, f"the promtool tests still pass when {alert} fires all the time"


def runbook_anchors() -> set[str]:
    anchors = set()
    for line in RUNBOOKS.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("alert", sorted(all_alerts()))
def test_every_alert_is_documented_and_labelled(alert: str) -> None:
    rule = all_alerts()[alert]
    assert rule["labels"]["severity"] in {"critical", "warning"}
    assert rule.get("for"), f"{alert} has no `for`: a single bad scrape would page someone"
    annotations = rule["annotations"]
    assert annotations["summary"].strip() and annotations["description"].strip()
    page, _, anchor = annotations["runbook_url"].partition("#")
    assert page == "docs/runbooks.md"
    assert anchor in runbook_anchors(), f"docs/runbooks.md has no section #{anchor} for {alert}"


def test_the_required_alerts_exist() -> None:
    # The list: error ratio, gate saturation, time to first token, open breaker,
    # model server unreachable, crash-looping pods.
    assert {
        "StacgisHighErrorRatio",
        "StacgisGateSaturated",
        "StacgisHighTimeToFirstToken",
        "StacgisCircuitBreakerOpen",
        "StacgisModelServerUnreachable",
        "StacgisPodCrashLooping",
    } <= set(all_alerts())
