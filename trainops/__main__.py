"""`python -m trainops` is the same as the `trainops` console script."""

import sys

from trainops.cli import main

sys.exit(main())
