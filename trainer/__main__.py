"""Entry point of the image: `torchrun ... -m trainer [flags]`."""

import faulthandler
import signal

from trainer.cli import main

# `kill -USR1 <pid>` prints every thread's stack: the first tool for a hung collective.
faulthandler.register(signal.SIGUSR1, all_threads=True)
raise SystemExit(main())
