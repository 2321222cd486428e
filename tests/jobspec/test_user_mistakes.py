"""Mistakes ML engineers make in job specs, each as a class: what the tools downstream would
do with it (kustomize, the API server, DeepSpeed, torch) decides what trainops must say."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.tools import line_of, replace_once, trainops

LLM = "jobs/llm-finetune.yaml"
RESNET = "jobs/resnet50-ddp.yaml"


def test_an_env_value_in_exponent_notation_reaches_the_pod_as_that_text(
    scratch: Path, tmp_path: Path
) -> None:
    """`LR: 1e-4` is text to YAML 1.1 but a number to kustomize (YAML 1.2): written plain into
    the base, it came out of `kustomize build` as 0.0001, which `env[].value` refuses."""
    values = {"LR": "1e-4", "STEPS": "1E5", "SCALE": "-.5", "MODE": "0o17"}
    env = "".join(f"\n  {k}: {v}" for k, v in values.items())
    replace_once(scratch / RESNET, "  NCCL_DEBUG: INFO", "  NCCL_DEBUG: INFO" + env)
    result = trainops(scratch, "validate", "--cluster", "cloud-h100", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["findings"] == []
    assert trainops(scratch, "render").returncode == 0
    built = trainops(
        scratch, "build", "--cluster", "cloud-h100", "--output", str(tmp_path / "built")
    )
    assert built.returncode == 0, built.stderr
    job = next(
        d
        for d in yaml.safe_load_all((tmp_path / "built" / "cloud-h100.yaml").read_text())
        if d and d["kind"] == "PyTorchJob" and d["metadata"]["name"] == "resnet50-ddp"
    )
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    env_out = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert {k: env_out[k] for k in values} == values


def test_optimizer_and_scheduler_numbers_in_exponent_notation_reach_deepspeed_as_numbers(
    scratch: Path,
) -> None:
    """`lr: 1e-4` under `optimizer.params` is a string to YAML 1.1: DeepSpeed hands it to
    torch.optim.AdamW, which stops at start-up (`'<=' not supported between 'float' and
    'str'`). Like the typed keys (`reduce_bucket_size: 5e8`), it is rendered as the number,
    with a warning at its line whose advice YAML 1.1 does read as a number."""
    replace_once(
        scratch / LLM,
        "    communication_data_type: bf16",
        "    communication_data_type: bf16\n"
        "    gradient_clipping: 1e0\n"
        "    optimizer:\n      type: AdamW\n"
        "      params: {lr: 1e-4, eps: 1e-8, betas: [0.9, 0.95], weight_decay: 0.1}\n"
        "    scheduler:\n      type: WarmupDecayLR\n"
        "      params: {warmup_type: linear, warmup_max_lr: 3e-4, total_num_steps: 1e5}",
    )
    result = trainops(scratch, "render")
    assert result.returncode == 0, result.stderr
    kustomization = yaml.safe_load((scratch / "base/llm-finetune/kustomization.yaml").read_text())
    (literal,) = kustomization["configMapGenerator"][0]["literals"]
    config = json.loads(literal.partition("=")[2])
    assert config["gradient_clipping"] == 1.0
    assert config["optimizer"]["params"] == {
        "lr": 1e-4,
        "eps": 1e-8,
        "betas": [0.9, 0.95],
        "weight_decay": 0.1,
    }
    assert config["scheduler"]["params"] == {
        "warmup_type": "linear",
        "warmup_max_lr": 3e-4,
        "total_num_steps": 100000,
    }
    validated = trainops(scratch, "validate", "--cluster", "cloud-h100")
    line = line_of(scratch / LLM, "params: {lr: 1e-4")
    warning = re.search(
        rf"{LLM}:{line}: warning .*`deepspeed.config.optimizer.params.eps`: YAML 1.1 reads"
        r" `1e-8` as a string .* \(write `([^`]+)` to say so\)",
        validated.stdout,
    )
    assert warning, validated.stdout
    assert yaml.safe_load(warning.group(1)) == 1e-8


def _only_error(root: Path) -> str:
    """The one error line of a failed `validate`: exit 2, no traceback, nothing written."""
    before = sorted(p for p in root.rglob("*") if p.is_file())
    result = trainops(root, "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_a_short_name_for_a_required_key_is_one_error_naming_it(scratch: Path) -> None:
    """`gpus: 8` or `gpu: 8` for `gpusPerReplica` was an unknown key with no suggestion and,
    for the same mistake, a second error: `gpusPerReplica` missing."""
    for spelling in ("gpus", "gpu", "GPUs"):
        replace_once(scratch / RESNET, "gpusPerReplica: 1", f"{spelling}: 1")
        line = line_of(scratch / RESNET, f"{spelling}: 1")
        error = _only_error(scratch)
        assert error.startswith(f"error: {RESNET}:{line}:1: unknown key `{spelling}`;"), error
        assert "did you mean `gpusPerReplica`?" in error
        replace_once(scratch / RESNET, f"{spelling}: 1", "gpusPerReplica: 1")


def test_a_key_at_the_wrong_indentation_says_where_it_belongs(scratch: Path) -> None:
    """A key dedented out of its mapping (`memory` under `resources`), or indented into the
    wrong one (`gpusPerReplica` under `resources`): one error at the key's own line naming
    the mapping it belongs to, not a list of allowed keys and a second, missing-key error."""
    replace_once(scratch / RESNET, "  memory: 16Gi", "memory: 16Gi")
    line = line_of(scratch / RESNET, "memory: 16Gi")
    error = _only_error(scratch)
    assert error.startswith(
        f"error: {RESNET}:{line}:1: unknown key `memory`: it belongs under `resources`"
    ), error
    replace_once(scratch / RESNET, "memory: 16Gi", "  memory: 16Gi")
    replace_once(scratch / RESNET, "gpusPerReplica: 1\n", "")
    replace_once(scratch / RESNET, "  memory: 16Gi", "  memory: 16Gi\n  gpusPerReplica: 1")
    line = line_of(scratch / RESNET, "gpusPerReplica: 1")
    error = _only_error(scratch)
    assert error.startswith(
        f"error: {RESNET}:{line}:3: unknown key `gpusPerReplica` in `resources`: it belongs at"
        " the top level; check its indentation"
    ), error


def test_a_type_error_the_quotes_caused_says_to_add_or_drop_them(scratch: Path) -> None:
    """`kubernetesVersion: 1.30` is the number 1.3 to YAML (`got 1.3` alone hides the cause);
    `replicas: "4"` and `zeroStage: "3"` are strings (the enum's did-you-mean offered "3")."""
    cases = [
        (
            "clusters/cloud-h100.yaml",
            'kubernetesVersion: "1.31"',
            "kubernetesVersion: 1.30",
            'got 1.3: YAML reads `1.30` as a number; write it in quotes, "1.30"',
        ),
        (RESNET, "replicas: 4", 'replicas: "4"', 'got "4"; write it without quotes: 4'),
        (LLM, "  zeroStage: 3", '  zeroStage: "3"', 'got "3"; write it without quotes: 3'),
        (RESNET, "gpusPerReplica: 1", 'gpusPerReplica: "1.5"', 'got "1.5"'),
    ]
    for rel, old, new, expected in cases:
        replace_once(scratch / rel, old, new)
        line = line_of(scratch / rel, new)
        error = _only_error(scratch)
        assert error.startswith(f"error: {rel}:{line}:"), error
        assert error.endswith(expected), error
        replace_once(scratch / rel, new, old)


def test_two_volumes_at_one_mount_path_are_refused_at_the_second(scratch: Path) -> None:
    """Copy-pasted volumes keeping one mountPath (or `/data/` beside `/data`, or the shared
    memory's `/dev/shm`): the API server refuses every pod of the job (`mountPath: must be
    unique`); validate reported only rules about what the mounts held."""
    for taken in ("/data", "/data/", "/dev/shm"):
        mount = "  checkpoints:\n    mountPath: "
        replace_once(scratch / RESNET, mount + "/checkpoints\n", f"{mount}{taken}\n")
        line = line_of(scratch / RESNET, "  checkpoints:") + 1
        error = _only_error(scratch)
        by = "sharedMemory" if taken == "/dev/shm" else "volumes.dataset"
        assert error.startswith(
            f"error: {RESNET}:{line}:5: `{taken}` is already mounted by `{by}`"
        ), error
        replace_once(scratch / RESNET, f"{mount}{taken}\n", mount + "/checkpoints\n")


def test_a_memory_or_storage_size_without_its_unit_is_refused(scratch: Path) -> None:
    """`memory: 16` is 16 bytes and `memory: 16m` 16 millibytes to Kubernetes, which takes
    both: the pod never starts (the runtime refuses a limit that small); validate passed."""
    cases = [
        (RESNET, "memory: 16Gi", "memory: 16", "`resources.memory: 16` is 16 bytes"),
        (RESNET, "memory: 16Gi", "memory: 16m", "`resources.memory: 16m` is 0.016 bytes"),
        (RESNET, "sharedMemory: 8Gi", "sharedMemory: 8", "`sharedMemory: 8` is 8 bytes"),
        (RESNET, "size: 500Gi", "size: 500", "`volumes.dataset.size: 500` is 500 bytes"),
        (RESNET, 'cpu: "6"', 'cpu: "6000"', "asks for 6000 CPUs, more than any node has"),
    ]
    for rel, old, new, expected in cases:
        replace_once(scratch / rel, old, new)
        line = line_of(scratch / rel, new)
        error = _only_error(scratch)
        assert error.startswith(f"error: {rel}:{line}:"), error
        assert expected in error and ("write the unit" in error or "6000m" in error), error
        replace_once(scratch / rel, new, old)
    replace_once(
        scratch / RESNET, "memory: 16Gi", "memory: 17179869184"
    )  # bytes, but 16 GiB of them
    assert trainops(scratch, "validate", "--cluster", "cloud-h100").returncode == 0


def test_one_deepspeed_mistake_on_two_clusters_is_one_error_naming_both(scratch: Path) -> None:
    """A pinned `train_batch_size` on an elastic job fails DeepSpeed's assertion at the same
    world size on each target: said once, naming both, not once per cluster."""
    replace_once(
        scratch / LLM,
        "    communication_data_type: bf16",
        "    communication_data_type: bf16\n    train_batch_size: 100",
    )
    line = line_of(scratch / LLM, "train_batch_size: 100")
    error = _only_error(scratch)
    assert error.startswith(
        f"error: {LLM}:{line}:5: DeepSpeed config invalid on `onprem-a100`: at world size 16"
    ), error
    assert error.endswith("(the same on `cloud-h100`)"), error


def test_a_profile_mistake_the_schema_words_alike_twice_is_said_once(scratch: Path) -> None:
    """An `rdma` block without its required keys was reported three times over (the
    schema's branches each word it the same)."""
    profile = "clusters/cloud-h100.yaml"
    replace_once(scratch / profile, "  transport: tcp", "  transport: tcp\n  rdma: {hca: mlx5}")
    line = line_of(scratch / profile, "rdma: {hca: mlx5}")
    error = _only_error(scratch)
    assert error.startswith(f"error: {profile}:{line}:3: missing required key `gidIndex`"), error


def test_an_empty_spec_file_says_so_and_an_empty_settings_file_is_no_settings(
    scratch: Path,
) -> None:
    """A job file emptied (or all commented out) said `expected exactly one YAML document,
    found 0`; `trainops.yaml`, whose every key is optional, was refused the same way."""
    (scratch / "jobs" / "draft.yaml").write_text("# name: draft\n# replicas: 2\n")
    error = _only_error(scratch)
    assert error == (
        "error: jobs/draft.yaml: the file holds no YAML document (it is empty, or only"
        " comments): write the spec here, or delete the file"
    ), error
    (scratch / "jobs" / "draft.yaml").unlink()
    (scratch / "trainops.yaml").write_text("# repoURL: https://github.com/example/x.git\n")
    result = trainops(scratch, "validate", "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_gpu_toleration_the_api_server_refuses_is_refused_in_the_profile(
    scratch: Path,
) -> None:
    """Every pod on the product carries the toleration, and the API server refuses each pod
    (pkg/apis/core/validation `ValidateTolerations`): `value` with `operator: Exists`, no
    `key` without `Exists`, `tolerationSeconds` without `effect: NoExecute`."""
    profile = "clusters/cloud-h100.yaml"
    exists = "        operator: Exists\n"
    cases = [
        (exists, exists + "        value: present\n", "value: present", "remove `value`"),
        (
            "      - key: nvidia.com/gpu\n" + exists,
            "      - operator: Equal\n        value: x\n",
            "- operator: Equal",
            "a toleration without `key` must be `operator: Exists`",
        ),
        (
            "        effect: NoSchedule\n",
            "        effect: NoSchedule\n        tolerationSeconds: 60\n",
            "tolerationSeconds: 60",
            "`tolerationSeconds` needs `effect: NoExecute`",
        ),
    ]
    for old, new, needle, expected in cases:
        replace_once(scratch / profile, old, new)
        line = line_of(scratch / profile, needle)
        error = _only_error(scratch)
        assert error.startswith(f"error: {profile}:{line}:"), error
        assert expected in error, error
        replace_once(scratch / profile, new, old)


def test_an_image_reference_the_kubelet_cannot_parse_is_refused_at_its_line(
    scratch: Path,
) -> None:
    """A digest cut short, a capital in the repository, a space after the colon: the API server
    takes any string, the kubelet reports `InvalidImageName` and no pod starts."""
    image = "image: ghcr.io/example/trainops-trainer:0.1.0"
    cases = [
        ("image: ghcr.io/example/trainops-trainer@sha256:abc123", "a digest is `@sha256:`"),
        (f"image: ghcr.io/example/trainops-trainer@sha256:{'a' * 63}", "has 63"),
        ("image: ghcr.io/Example/trainops-trainer:0.1.0", "repository names are lower-case"),
        ('image: "ghcr.io/example/trainops-trainer: 0.1.0"', "it holds a space"),
    ]
    for new, expected in cases:
        replace_once(scratch / RESNET, image, new)
        line = line_of(scratch / RESNET, new)
        error = _only_error(scratch)
        assert error.startswith(f"error: {RESNET}:{line}:1: image `"), error
        assert expected in error and "InvalidImageName" in error, error
        replace_once(scratch / RESNET, new, image)
    replace_once(
        scratch / RESNET, image, f"image: ghcr.io/example/trainops-trainer@sha256:{'a' * 64}"
    )
    assert trainops(scratch, "validate", "--cluster", "cloud-h100").returncode == 0


def test_a_document_of_another_kind_in_a_spec_folder_is_one_error_saying_where(
    scratch: Path,
) -> None:
    """A cluster profile saved in jobs/, a job spec in clusters/, a Kubeflow PyTorchJob dropped
    into jobs/: each was a screen of unknown keys (one per line of the file)."""
    profile = (scratch / "clusters" / "cloud-h100.yaml").read_text()
    (scratch / "jobs" / "cloud-h100.yaml").write_text(profile)
    line = line_of(scratch / "jobs/cloud-h100.yaml", "kind: ClusterProfile")
    assert _only_error(scratch) == (
        f"error: jobs/cloud-h100.yaml:{line}:1: `kind: ClusterProfile` belongs in clusters/:"
        " jobs/ holds `kind: TrainingJob`"
    )
    (scratch / "jobs" / "cloud-h100.yaml").unlink()
    (scratch / "jobs" / "pt.yaml").write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: pt}\n"
        "spec:\n  pytorchReplicaSpecs: {}\n"
    )
    error = _only_error(scratch)
    assert error.startswith("error: jobs/pt.yaml:2:1: `kind: PyTorchJob` is a Kubeflow manifest")
    assert "`trainops import FILE`" in error


def test_the_trainers_engine_flag_and_the_deepspeed_block_must_agree(scratch: Path) -> None:
    """Our trainer refuses `--deepspeed-config` without `--engine deepspeed`, and the reverse
    (trainer/config.py `_check_engine`): every pod failed at start while validate passed."""
    cases = [
        (
            LLM,
            "  - --engine=deepspeed\n  - --model=hf-causal-lm\n",
            "  - --model=hf-causal-lm\n",
            "deepspeed:",
            "add `--engine=deepspeed` to args",
        ),
        (
            RESNET,
            "  - --model=resnet50\n",
            "  - --engine=deepspeed\n  - --model=resnet50\n",
            "--engine=deepspeed",
            "`--engine deepspeed` needs a DeepSpeed config",
        ),
    ]
    for rel, old, new, needle, expected in cases:
        replace_once(scratch / rel, old, new)
        line = line_of(scratch / rel, needle)
        error = _only_error(scratch)
        assert error.startswith(f"error: {rel}:{line}:"), error
        assert expected in error, error
        replace_once(scratch / rel, new, old)


def test_a_whole_number_written_as_a_float_is_an_error_not_a_traceback(scratch: Path) -> None:
    """JSON Schema counts 8.0 as an integer: `gpusPerReplica: 8.0` and `parameters: 1.3e+10`
    passed the schema and crashed the loader with a TypeError traceback (exit 1);
    `replicas: 4.0` was rendered as `4.0`."""
    cases = [
        (LLM, "gpusPerReplica: 8", "gpusPerReplica: 8.0", "write a whole number: 8"),
        (LLM, "  parameters: 13015864320", "  parameters: 1.3e+10", "number: 13000000000"),
        (LLM, "replicas: 4", "replicas: 4.0", "write a whole number: 4"),
        ("clusters/cloud-h100.yaml", "    perNode: 8", "    perNode: 8.0", "number: 8"),
    ]
    for rel, old, new, expected in cases:
        replace_once(scratch / rel, old, new)
        line = line_of(scratch / rel, new)
        error = _only_error(scratch)
        assert error.startswith(f"error: {rel}:{line}:"), error
        assert error.endswith(expected), error
        replace_once(scratch / rel, new, old)


def test_a_shell_variable_in_args_is_found_at_its_spec_line(scratch: Path) -> None:
    """`--batch-size=${BATCH_SIZE}`: no shell runs a job's command and the kubelet expands
    `$(VAR)` only, so the trainer got the text and stopped at start; validate passed."""
    replace_once(scratch / RESNET, "  - --batch-size=32", "  - --batch-size=${BATCH_SIZE}")
    line = line_of(scratch / RESNET, "--batch-size=${BATCH_SIZE}")
    result = trainops(scratch, "validate", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["rule"] == "env-reference-undefined"
    assert (finding["file"], finding["line"]) == (RESNET, line)
    assert "write `$(BATCH_SIZE)`" in finding["message"]


def test_yaml_slips_are_pointed_at_their_own_line_with_the_fix(scratch: Path) -> None:
    """`image:ghcr.io/...` (no space after the colon) and `  --epochs=10` (no `- `) were
    reported on the line after the mistake; `replicas: 4# four` read as the text `4# four`."""
    cases = [
        ("image: ghcr.io/", "image:ghcr.io/", "image:ghcr.io/", "a key needs a colon and a space"),
        ("  - --epochs=10", "  --epochs=10", "--epochs=10", "a list item a dash and a space"),
        ("replicas: 4", "replicas: 4# four", "4# four", "a comment needs a space before its `#`"),
    ]
    for old, new, needle, expected in cases:
        replace_once(scratch / RESNET, old, new)
        line = line_of(scratch / RESNET, needle)
        error = _only_error(scratch)
        assert error.startswith(f"error: {RESNET}:{line}:"), error
        assert expected in error, error
        replace_once(scratch / RESNET, new, old)


def test_deepspeed_settings_that_fail_at_start_up_are_refused_at_their_line(
    scratch: Path,
) -> None:
    """`communication_data_type: bfloat16` (DeepSpeed raises ValueError: fp16, bf16 or fp32)
    and `bf16: {enabled: false}` beside `precision: bf16` (the job trained in fp32, and the
    memory estimate then refused it as too big; `enabled: auto`, which only the HF Trainer fills,
    is the same under our trainer) passed as something else, and so did
    `offload_param: {device: nvme}` without `nvme_path` (DeepSpeed joins a None path)."""
    anchor = "    communication_data_type: bf16"
    cases = [
        (anchor.replace("bf16", "bfloat16"), "must be one of fp16, bf16, fp32"),
        (anchor + "\n    bf16: {enabled: false}", "contradicts the config, which disables bf16"),
        (anchor + "\n    bf16: {enabled: auto}", "`enabled: auto` is filled in only by the HF"),
    ]
    for new, expected in cases:
        replace_once(scratch / LLM, anchor, new)
        line = line_of(scratch / LLM, new.splitlines()[-1])
        error = _only_error(scratch)
        assert error.startswith(f"error: {LLM}:{line}:"), error
        assert expected in error, error
        replace_once(scratch / LLM, new, anchor)
    nvme = "offload_param: {device: nvme}"
    replace_once(scratch / LLM, "offload_param: {device: none}", nvme)
    error = _only_error(scratch)
    assert error.startswith(f"error: {LLM}:{line_of(scratch / LLM, nvme)}:"), error
    assert "needs `nvme_path`" in error, error


def test_a_target_naming_the_profiles_file_is_pointed_at_its_name(scratch: Path) -> None:
    """`cluster: cloud-h100.yaml` was told to `add clusters/cloud-h100.yaml.yaml`."""
    replace_once(scratch / RESNET, "  - cluster: cloud-h100\n", "  - cluster: cloud-h100.yaml\n")
    error = _only_error(scratch)
    assert "unknown cluster `cloud-h100.yaml`; did you mean `cloud-h100`?" in error, error
    assert ".yaml.yaml" not in error and "add clusters/" not in error, error
