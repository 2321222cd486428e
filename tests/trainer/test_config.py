"""The command-line surface (frozen: the renderer's jobs depend on it) and config resolution."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from trainer.cli import build_parser, main
from trainer.config import RANGES, ConfigError, TrainConfig, parse_args

# The renderer's contract (issue 5): these flags must keep their names.
FROZEN_FLAGS = {
    "--config", "--model", "--hf-model", "--data", "--data-path", "--batch-size", "--grad-accum",
    "--epochs", "--steps", "--lr", "--optimizer", "--precision", "--grad-clip",
    "--checkpoint-dir", "--checkpoint-interval", "--keep-checkpoints", "--seed", "--num-workers",
    "--metrics-port", "--engine", "--deepspeed-config",
}  # fmt: skip


def test_frozen_flags_are_all_there() -> None:
    flags = {opt for action in build_parser()._actions for opt in action.option_strings}
    assert flags >= FROZEN_FLAGS


def test_seed_000_style_resnet50_job_parses() -> None:
    cfg = parse_args(
        [
            "--model",
            "resnet50",
            "--data",
            "image-folder",
            "--data-path",
            "/data/train",
            "--batch-size",
            "32",
            "--epochs",
            "10",
            "--optimizer",
            "sgd",
            "--lr",
            "0.01",
            "--precision",
            "bf16",
            "--checkpoint-dir",
            "/checkpoints/resnet",
            "--checkpoint-interval",
            "500",
            "--num-workers",
            "4",
        ],
        env={},
    )
    assert (cfg.model, cfg.batch_size, cfg.metrics_port) == ("resnet50", 32, 9090)


def test_deepspeed_job_parses_without_reading_mounted_files() -> None:
    argv = [
        "--model",
        "hf-causal-lm",
        "--hf-model",
        "/models/llama-2-13b",
        "--data",
        "tokens",
        "--data-path",
        "/data/train",
        "--engine",
        "deepspeed",
        "--deepspeed-config",
        "/etc/trainops/ds_config.json",
        "--epochs",
        "3",
        "--lr",
        "2e-5",
    ]
    cfg = parse_args(argv, env={"TRAINOPS_METRICS_PORT": "9400"}, load_files=False)
    assert cfg.engine == "deepspeed" and cfg.metrics_port == 9400
    with pytest.raises(ConfigError, match=r"ds_config\.json: cannot read"):
        parse_args(argv, env={})


def test_flags_override_yaml_and_yaml_overrides_defaults(tmp_path: Path) -> None:
    file = tmp_path / "train.yaml"
    file.write_text("model: gpt-tiny\ndata: synthetic-tokens\nlr: 0.5\nbatch-size: 4\n")
    cfg = parse_args(["--config", str(file), "--lr", "0.1"], env={})
    assert (cfg.model, cfg.lr, cfg.batch_size, cfg.epochs) == ("gpt-tiny", 0.1, 4, 1)
    assert {"model", "lr", "batch_size"} <= cfg.explicit and "epochs" not in cfg.explicit


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("modle: resnet18\n", "unknown config field"),
        ("lr: fast\n", "`lr` must be"),
        ("- a\n", "must be a mapping"),
        ("lr: [1\n", r"train.yaml:\d+: invalid YAML"),
    ],
)
def test_bad_yaml_names_file_and_field(tmp_path: Path, yaml_text: str, message: str) -> None:
    file = tmp_path / "train.yaml"
    file.write_text(yaml_text)
    with pytest.raises(ConfigError, match=message):
        parse_args(["--config", str(file)], env={})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "vgg"], "invalid choice"),
        (["--batch-size", "0"], "must be >= 1"),
        (["--bogus"], "unrecognized arguments"),
        (["--model", "gpt-tiny"], "cannot train on data synthetic-image"),
        (["--data", "image-folder"], "needs `--data-path"),
        (["--engine", "deepspeed"], "needs `--deepspeed-config"),
        (["--model", "hf-causal-lm", "--data", "tokens", "--data-path", "x"], "--hf-model"),
        (["--grad-clip", "-1"], r"`grad_clip` \(--grad-clip\) must be > 0"),
        (["--compile", "--engine", "deepspeed", "--deepspeed-config", "x.json"], "--compile"),
    ],
)
def test_bad_flags_raise_config_error(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_args(argv, env={})


def test_cli_exits_2_with_a_message_and_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "vgg"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "Traceback" not in err


def test_metrics_port_env_and_flag() -> None:
    assert parse_args([], env={"TRAINOPS_METRICS_PORT": "9100"}).metrics_port == 9100
    assert (
        parse_args(["--metrics-port", "9200"], env={"TRAINOPS_METRICS_PORT": "9100"}).metrics_port
        == 9200
    )
    with pytest.raises(ConfigError, match="TRAINOPS_METRICS_PORT"):
        parse_args([], env={"TRAINOPS_METRICS_PORT": "http"})


def ds_file(tmp_path: Path, **extra: object) -> str:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2,
                                "gradient_accumulation_steps": 8, "bf16": {"enabled": True},
                                "gradient_clipping": 1.0, **extra}))  # fmt: skip
    return str(path)


def test_deepspeed_config_is_the_source_of_truth(tmp_path: Path) -> None:
    base = ["--model", "gpt-tiny", "--data", "synthetic-tokens", "--engine", "deepspeed"]
    cfg = parse_args([*base, "--deepspeed-config", ds_file(tmp_path)], env={})
    assert (cfg.batch_size, cfg.grad_accum, cfg.precision, cfg.grad_clip) == (2, 8, "bf16", 1.0)
    same = parse_args([*base, "--deepspeed-config", ds_file(tmp_path), "--batch-size", "2"], env={})
    assert same.batch_size == 2
    for flag, value in (("--batch-size", "4"), ("--grad-accum", "1"), ("--precision", "fp32"),
                        ("--grad-clip", "0.5")):  # fmt: skip
        with pytest.raises(ConfigError, match=f"{flag} .* contradicts .*ds.json"):
            parse_args([*base, "--deepspeed-config", ds_file(tmp_path), flag, value], env={})


def test_config_round_trips_through_checkpoint_dict() -> None:
    cfg = parse_args(["--seed", "3"], env={})
    assert TrainConfig(**cfg.to_dict()) == cfg


def test_every_numeric_field_has_a_range() -> None:
    numeric = {
        f.name
        for f in dataclasses.fields(TrainConfig)
        if ("int" in str(f.type) or "float" in str(f.type)) and "frozenset" not in str(f.type)
    }
    assert numeric == set(RANGES)


@pytest.mark.parametrize("name", sorted(RANGES))
def test_yaml_values_out_of_range_name_the_field(tmp_path: Path, name: str) -> None:
    """YAML goes through the same range checks as flags (log_interval: 0 used to divide by 0)."""
    low, inclusive, high = RANGES[name]
    bad = low - 1 if inclusive else low
    file = tmp_path / "train.yaml"
    file.write_text(f"{name}: {bad}\n")
    with pytest.raises(ConfigError, match=f"`{name}` .* must be"):
        parse_args(["--config", str(file)], env={})
    flag = "--" + name.replace("_", "-")
    with pytest.raises(ConfigError, match=f"`{name}` \\({flag}\\) must be"):
        parse_args([flag, str(bad)], env={})
    if high is not None:
        file.write_text(f"{name}: {int(high) + 1}\n")
        with pytest.raises(ConfigError, match=f"`{name}` .* must be {low}..{high}"):
            parse_args(["--config", str(file)], env={})


@pytest.mark.parametrize("text", ["log_interval: 0", "lr: .nan", "weight_decay: .inf"])
def test_yaml_degenerate_numbers_are_config_errors(tmp_path: Path, text: str) -> None:
    file = tmp_path / "train.yaml"
    file.write_text(text + "\n")
    with pytest.raises(ConfigError, match=f"`{text.split(':', maxsplit=1)[0]}`"):
        parse_args(["--config", str(file)], env={})
