"""`python -m generators` is the same as the `trainops` console script."""

import sys

from generators.cli import main

sys.exit(main())
