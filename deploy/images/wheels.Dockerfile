# syntax=docker/dockerfile:1.7
# The builder base of every Python service image: the Python image plus a wheel of each third-party
# requirement of every service, built once. A service's builder stage starting from it installs
# offline from these wheels (PIP_NO_INDEX), so its layer takes seconds instead of minutes.
# Built by scripts/images.py from a context holding requirements.txt (generated from the services'
# pyproject.toml files, pinned as they are) and constraints.txt (the exact version of every transitive
# dependency, as tested); the services' own code is never in this image.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm
FROM ${PYTHON_IMAGE}
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt constraints.txt /opt/stacgis-wheels/
# A throwaway venv runs pip (Debian's python3 has no pip of its own); only the wheels stay.
RUN python -m venv /tmp/wheel-builder \
 && /tmp/wheel-builder/bin/pip wheel --no-cache-dir --wheel-dir /opt/stacgis-wheels \
      -c /opt/stacgis-wheels/constraints.txt -r /opt/stacgis-wheels/requirements.txt \
 && rm -rf /tmp/wheel-builder
ENV PIP_FIND_LINKS=/opt/stacgis-wheels \
    PIP_NO_INDEX=1
