"""`python -m stacgis_observability [--check] [--chart DIR]`: (re)generate the chart's dashboards and rules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .generate import problems, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chart", type=Path, default=Path("charts/stacgis"), help="the Helm chart folder")
    parser.add_argument("--check", action="store_true", help="only report files that are not up to date")
    args = parser.parse_args()
    if not (args.chart / "Chart.yaml").exists():
        parser.error(f"--chart: {args.chart} is not a Helm chart (no Chart.yaml)")
    if args.check:
        found = problems(args.chart)
        for line in found:
            print(line, file=sys.stderr)
        sys.exit(1 if found else 0)
    for path in write(args.chart):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
