"""trainops trainer: the PyTorch DDP / DeepSpeed entrypoint the rendered jobs run.

Public surface: `trainer.config.parse_args(argv) -> TrainConfig` (raises `ConfigError`),
`trainer.cli.build_parser()`, `trainer.cli.main(argv) -> int`. See docs/trainer.md.
"""
