"""`python -m tests.eval --help`."""

import sys

from .run import main

sys.exit(main())
