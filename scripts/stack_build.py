"""What `make up` prepares before starting the services: migrations, data loads and the frontend build.

Used by scripts/stack.py.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heartbeat
from stack_env import LOCAL, PYTHON, ROOT, say
from stack_services import Service, module_exists


def run_step(title: str, command: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
    say(title)
    # A line at least every 30 s with the time spent: a first data load is silent for minutes otherwise.
    code = heartbeat.run(command, title.split(" (")[0], prefix="[stack]", cwd=cwd, env=env)
    if code != 0:
        raise SystemExit(f"[stack] failed ({' '.join(command)} exited with {code}); see the output above")


def owner_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with every database URL the owner role's: migrations and data loads create and alter
    schemas, which the application role the services connect as may not."""
    owner = env.get("STACGIS_OWNER_DATABASE_URL")
    if not owner:
        return env
    return {
        **env,
        **{key: owner for key in env if key.endswith("_DATABASE_URL") and key != "STACGIS_OWNER_DATABASE_URL"},
    }


def prepare_data(env: dict[str, str], present: Sequence[Service]) -> None:
    """Migrations and the data the services need to start, each idempotent (a second run only checks and
    skips), as the owner role. The place names come after the services start (load_place_names)."""
    env = owner_env(env)
    names = {service.name for service in present}
    python = str(PYTHON)
    for service in present:
        if module_exists(f"{service.package}.migrate"):
            run_step(f"{service.name}: applying migrations", [python, "-m", f"{service.package}.migrate"], env)
    if "raster-tools" in names:
        run_step(
            "raster-tools: demo data (COGs + STAC catalog; built once)",
            [python, "-m", "stacgis_raster.demo_data", "--cache", str(LOCAL / "cache"), "--out", str(LOCAL / "data")],
            env,
        )
    if "knowledge-tools" in names:
        documents = ROOT / "knowledge"
        if documents.is_dir():
            run_step(
                "knowledge-tools: ingesting knowledge/ (unchanged documents are skipped)",
                [python, "-m", "stacgis_knowledge.ingest", str(documents)],
                env,
            )
        else:
            say("warning: no knowledge/ folder: the knowledge base stays empty")


def load_place_names(env: dict[str, str]) -> None:
    """The vector datasets (countries, cities, US states and counties), loaded while the services already
    serve: the chat, the map and the raster tools work meanwhile, and vector-tools' /readyz and the map
    say which place names are still arriving. Idempotent: a later run finds the same sources and skips."""
    run_step(
        "vector-tools: loading place names (the first run embeds and indexes ~37k of them: about 3 min)",
        [str(PYTHON), "-m", "stacgis_vector.load", "--cache", str(LOCAL / "cache")],
        owner_env(env),
    )


def frontend_sources(frontend: Path) -> list[Path]:
    files = [frontend / name for name in ("index.html", "package.json", "package-lock.json", "vite.config.ts")]
    for folder in ("src", "public"):
        files.extend(path for path in (frontend / folder).rglob("*") if path.is_file())
    return [path for path in files if path.exists()]


def build_frontend(env: dict[str, str]) -> Path:
    frontend = ROOT / "frontend"
    dist = frontend / "dist"
    index = dist / "index.html"
    if not (frontend / "package.json").exists():
        say("warning: frontend/ has no package.json: the ingress serves no web app")
        dist.mkdir(parents=True, exist_ok=True)
        return dist
    newest = max((path.stat().st_mtime for path in frontend_sources(frontend)), default=0.0)
    if index.exists() and index.stat().st_mtime >= newest:
        return dist
    if not (frontend / "node_modules").is_dir():
        run_step("frontend: installing npm packages", ["npm", "ci", "--no-audit", "--no-fund"], env, cwd=frontend)
    run_step("frontend: building (vite)", ["npm", "run", "build", "--silent"], env, cwd=frontend)
    return dist
