"""Every test suite runs with the local development secrets, which services refuse unless this switch is
on; a test that checks the refusal turns it off for the process it starts."""

import os

os.environ.setdefault("STACGIS_ALLOW_DEV_SECRETS", "1")
