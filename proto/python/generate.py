"""Generate the Python types of the stacgis contract from ../stacgis/v1/*.proto.

    python proto/python/generate.py          # write src/stacgis_proto/v1/*_pb2.py(i)
    python proto/python/generate.py --check  # exit 1 when the committed code is stale

protoc names modules after the proto package (`stacgis.v1`); imports between the generated
modules are rewritten to the installable package `stacgis_proto.v1`.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent
SOURCE_DIR = PROTO_ROOT / "stacgis" / "v1"
TARGET_DIR = HERE / "src" / "stacgis_proto" / "v1"
IMPORT = re.compile(r"^from stacgis\.v1 import ", re.MULTILINE)
# The module name protoc records for the message classes (their __module__).
MODULE_NAME = re.compile(r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, ')stacgis\.v1\.")
INIT = '"""Generated from proto/stacgis/v1 by proto/python/generate.py; do not edit."""\n'


def rewrite(code: str) -> str:
    code = IMPORT.sub("from stacgis_proto.v1 import ", code)
    return MODULE_NAME.sub(r"\1stacgis_proto.v1.", code)


def generate() -> dict[str, str]:
    """File name -> content of every generated module."""
    protos = sorted(SOURCE_DIR.glob("*.proto"))
    well_known = str(resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as out:
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            *(str(path.relative_to(PROTO_ROOT)) for path in protos),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        generated = Path(out) / "stacgis" / "v1"
        files = {
            path.name: rewrite(path.read_text(encoding="utf-8"))
            for path in sorted(generated.iterdir())
            if path.suffix in {".py", ".pyi"}
        }
    files["__init__.py"] = INIT
    return files


def stale(files: dict[str, str]) -> list[str]:
    problems = []
    present = {path.name for path in TARGET_DIR.glob("*.py*")}
    for extra in sorted(present - set(files)):
        problems.append(f"{extra}: no longer generated")
    for name, content in files.items():
        path = TARGET_DIR / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != content:
            diff = difflib.unified_diff(
                current.splitlines(), content.splitlines(), f"committed/{name}", f"fresh/{name}", lineterm="", n=1
            )
            problems.append("\n".join(list(diff)[:20]))
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    options = parser.parse_args()
    files = generate()
    if options.check:
        problems = stale(files)
        if problems:
            print("generated Python code is stale; run proto/python/generate.py", *problems, sep="\n", file=sys.stderr)
            raise SystemExit(1)
        print("generated Python code is up to date")
        return
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    for old in TARGET_DIR.glob("*.py*"):
        if old.name not in files:
            old.unlink()
    for name, content in files.items():
        (TARGET_DIR / name).write_text(content, encoding="utf-8")
    print(f"wrote {len(files)} files to {TARGET_DIR.relative_to(PROTO_ROOT.parent)}")


if __name__ == "__main__":
    main()
