#!/usr/bin/env python3
"""The container engine `make images` and tests/images use, in one place: the Debian packages that
install it (scripts/setup.sh with STACGIS_SETUP_IMAGES=1 reads them from here), the binaries it needs
and how podman is called on these hosts.

    python3 scripts/image_engine.py packages    the apt packages, one per line
    python3 scripts/image_engine.py binaries    the commands they must provide, one per line
"""

from __future__ import annotations

import sys

# podman and what it runs with here, and mmdebstrap for the bases made from Debian packages.
APT_PACKAGES = ("podman", "buildah", "mmdebstrap", "runc", "uidmap", "slirp4netns", "fuse-overlayfs")
APT_COMMAND = "apt-get install -y " + " ".join(APT_PACKAGES)
REQUIRED_BINARIES = ("podman", "mmdebstrap", "runc")
# crun refuses the hybrid cgroup layout of these hosts, and root lacks CAP_SYS_RESOURCE to raise the
# default rlimits.
PODMAN = ("podman", "--runtime", "runc")
ULIMITS = ("--ulimit", "nofile=10000:10000", "--ulimit", "nproc=10000:10000")


def main(argv: list[str]) -> int:
    lists = {"packages": APT_PACKAGES, "binaries": REQUIRED_BINARIES}
    if len(argv) != 1 or argv[0] not in lists:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(lists[argv[0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
