"""Entry point of the image: `torchrun ... -m trainer [flags]`."""

from trainer.cli import main

raise SystemExit(main())
