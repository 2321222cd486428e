"""Our trainer's start-up checks on the argv trainops renders, run at the door: a job whose
flags the trainer refuses (`trainer/config.py` `_check_engine`) fails on every pod at start,
after the queue wait, while validate passed it."""

from __future__ import annotations

from typing import Any

from trainops.jobspec.problems import Collector

TRAINER_CONFIG_FLAG = "--deepspeed-config"


def _engine(args: list[str]) -> tuple[str, int | None]:
    """The `--engine` the args choose (the trainer's default: ddp) and where it is."""
    for i, arg in enumerate(args):
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1], i
        if arg == "--engine" and i + 1 < len(args):
            return args[i + 1], i
    return "ddp", None


def check_engine(d: dict[str, Any], out: Collector) -> None:
    """`deepspeed:` and the trainer's `--engine` say one thing."""
    if list(d.get("command") or ())[-2:] != ["-m", "trainer"]:
        return  # another program: its flags are its own
    engine, at = _engine([str(a) for a in d.get("args", ())])
    ds = d.get("deepspeed")
    if (
        ds
        and engine != "deepspeed"
        and ds.get("configFlag", TRAINER_CONFIG_FLAG) == (TRAINER_CONFIG_FLAG)
    ):
        out.add(
            ["deepspeed"] if at is None else ["args", at],
            f"the trainer runs `--engine {engine}`, which refuses the `{TRAINER_CONFIG_FLAG}`"
            " trainops passes for `deepspeed:` (`--deepspeed-config` is only used with"
            " `--engine deepspeed`): add `--engine=deepspeed` to args",
        )
    elif not ds and engine == "deepspeed" and at is not None:
        out.add(
            ["args", at],
            "`--engine deepspeed` needs a DeepSpeed config, which trainops renders from a"
            " `deepspeed:` block (zeroStage, precision): add one, or use `--engine=ddp`",
        )
