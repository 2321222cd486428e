"""Entry point of the image: `torchrun ... -m trainer [flags]`."""

import faulthandler
import logging
import os
import signal
import sys

from trainer.cli import main

# A fatal signal (SIGSEGV, SIGABRT from a C++ extension) prints the Python stack of every thread,
# and `kill -USR1 <pid>` does so on demand: the first tools for a crash or a hung collective.
faulthandler.enable(all_threads=True)
faulthandler.register(signal.SIGUSR1, all_threads=True)

code = main()
# By now the process group is left and every checkpoint file is written, fsynced and closed.
# Skip interpreter finalisation: destructors of C++ extension state (gloo's worker threads,
# DeepSpeed's CPU communication op) can abort a process that has already succeeded ("terminate
# called without an active exception", SIGABRT), which torchrun and the Training Operator would
# count as a failed worker. Flush what Python buffers, then leave with the trainer's own code.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
