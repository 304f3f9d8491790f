"""The local ingress of `make up`: nginx, configured from deploy/local/nginx.conf.template.

Used by scripts/stack.py and by tests/load/private_stack.py (which renders the same template).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack_env import LOCAL, LOGS, ROOT, RUN

INGRESS_PORT = 8080
INGRESS = f"http://localhost:{INGRESS_PORT}"
NGINX_TEMPLATE = ROOT / "deploy" / "local" / "nginx.conf.template"


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(path)), None
    )
    if not found:
        raise SystemExit("[stack] nginx is missing: run `make setup` (as root it installs nginx-light)")
    return found


def nginx_command() -> list[str]:
    return [nginx_binary(), "-p", str(LOCAL / "nginx"), "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;"]


def content_security_policy(env: Mapping[str, str]) -> str:
    """frontend/csp.conf, with the hosts set_map_style may use (ORCHESTRATOR_MAP_STYLE_HOSTS) as the chart adds them."""
    policy = next(line for line in (ROOT / "frontend" / "csp.conf").read_text().splitlines() if line.startswith("add_"))
    hosts = " ".join(json.loads(env.get("ORCHESTRATOR_MAP_STYLE_HOSTS") or "[]"))
    if hosts:
        policy = re.sub(r"(img-src [^;]*|connect-src [^;]*)", lambda m: f"{m.group(1)} {hosts}", policy)
    return policy + "\n"


def temp_dirs(folder: Path) -> Path:
    """FOLDER/tmp with nginx's temporary folders, writable by its workers; returns FOLDER/tmp."""
    tmp = folder / "tmp"
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        # Run as root, nginx's workers drop to `nobody`, which must write request bodies here.
        nobody = pwd.getpwnam("nobody")
        for path in [tmp, *tmp.iterdir()]:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    return tmp


def render_template(replacements: Mapping[str, object]) -> str:
    """deploy/local/nginx.conf.template with each {{NAME}} replaced."""
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: str(replacements[m.group(1)]), NGINX_TEMPLATE.read_text())


def write_nginx_config(dist: Path, env: Mapping[str, str]) -> None:
    folder = LOCAL / "nginx"
    tmp = temp_dirs(folder)
    mime_types = next(
        (p for p in ("/etc/nginx/mime.types", "/usr/local/etc/nginx/mime.types") if os.path.exists(p)), None
    )
    if mime_types is None:
        raise SystemExit("[stack] nginx's mime.types is missing: reinstall nginx (nginx-light)")
    (folder / "csp.conf").write_text(content_security_policy(env))
    replacements = {
        "RUN": RUN,
        "LOGS": LOGS,
        "TMP": tmp,
        "DIST": dist,
        "MIME_TYPES": mime_types,
        "CSP": folder / "csp.conf",
    }
    (folder / "nginx.conf").write_text(render_template(replacements))
    check = subprocess.run([*nginx_command()[:-2], "-t", "-q"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise SystemExit(f"[stack] the ingress configuration is invalid:\n{check.stderr}")
