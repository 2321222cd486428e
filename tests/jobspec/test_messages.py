"""Load-time messages name the value they are about, at its line, with the nearest valid one
(issue 34, item 3); a GPU product may be named by what `trainops build` and `kubectl get
nodes` show, its node label's value."""

from __future__ import annotations

from pathlib import Path

from tests.tools import trainops, tree

JOB = "jobs/resnet50-ddp.yaml"


def _edit(root: Path, rel: str, old: str, new: str) -> int:
    """Replace `old` by `new` in `rel`; the 1-based line of the change."""
    path = root / rel
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    return text[: text.index(old)].count("\n") + 1


def _rendered(root: Path) -> dict[str, bytes]:
    result = trainops(root, "render")
    assert result.returncode == 0, result.stderr
    return {k: v for k, v in tree(root).items() if k.startswith(("base/", "overlays/"))}


def test_the_node_label_value_names_the_same_gpu_product(scratch: Path, tmp_path: Path) -> None:
    before = _rendered(scratch)
    _edit(scratch, JOB, "gpuProduct: a100-40gb", "gpuProduct: NVIDIA-A100-SXM4-40GB")
    assert _rendered(scratch) == before


def test_an_unknown_gpu_product_is_named_at_its_line_with_what_the_cluster_has(
    scratch: Path,
) -> None:
    line = _edit(scratch, JOB, "gpuProduct: a100-40gb", "gpuProduct: A100")
    result = trainops(scratch, "render")
    assert result.returncode == 2
    assert (
        f"{JOB}:{line}:5: `gpuProduct: A100` names no GPU product of cluster `onprem-a100`"
        in result.stderr
    )
    assert "a100-40gb (nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB)" in result.stderr


def test_a_value_not_one_of_the_choices_gets_the_nearest(scratch: Path) -> None:
    line = _edit(scratch, JOB, "framework: pytorch", "framework: pytorh")
    result = trainops(scratch, "render")
    assert result.returncode == 2
    assert (
        f'{JOB}:{line}:1: `framework` must be one of "pytorch", "tensorflow", "mpi", got'
        ' "pytorh"; did you mean "pytorch"?' in result.stderr
    )


def test_a_namespace_the_cluster_does_not_allow_gets_the_nearest(scratch: Path) -> None:
    line = _edit(scratch, JOB, "namespace: ml-vision", "namespace: ml-visoin")
    result = trainops(scratch, "render")
    assert result.returncode == 2
    # One mistake, one problem naming every target that refuses it.
    assert result.stderr.count("is not allowed on") == 1, result.stderr
    assert (
        f"{JOB}:{line}:1: namespace `ml-visoin` is not allowed on cluster `onprem-a100`; did you"
        " mean `ml-vision`? (allowed: ml-vision, ai-training), nor on cluster `cloud-h100`; did"
        " you mean `ml-vision`?" in result.stderr
    )


def test_a_storage_class_the_cluster_does_not_offer_gets_the_nearest(scratch: Path) -> None:
    size = "    size: 100Gi\n"
    line = _edit(scratch, JOB, size, f"{size}    storageClass: local-nvm\n")
    result = trainops(scratch, "render")
    assert result.returncode == 2
    assert (
        f"{JOB}:{line + 1}:5: storage class `local-nvm` is not offered by cluster `onprem-a100`;"
        " did you mean `local-nvme`?" in result.stderr
    )


def test_deepspeed_names_for_our_fields_get_their_did_you_mean(scratch: Path) -> None:
    """`stage:`, `gradient_accumulation_steps:`, `micro_batch:` under `deepspeed:` are
    DeepSpeed's or the user's own spellings of `zeroStage`, `gradientAccumulation`,
    `microBatchPerGpu`: too far apart for difflib, so no hint was given."""
    llm = "jobs/llm-finetune.yaml"
    cases = [
        (
            "  zeroStage: 3\n",
            "  stage: 3\n",
            "unknown key `stage` in `deepspeed`; did you mean `zeroStage`?",
        ),
        (
            "  gradientAccumulation: 8\n",
            "  gradient_accumulation_steps: 8\n",
            "did you mean `gradientAccumulation`?",
        ),
        ("  microBatchPerGpu: 2\n", "  micro_batch: 2\n", "did you mean `microBatchPerGpu`?"),
    ]
    for old, new, expected in cases:
        line = _edit(scratch, llm, old, new)
        result = trainops(scratch, "validate")
        assert result.returncode == 2, result.stderr
        errors = [e for e in result.stderr.splitlines() if e.startswith("error: ")]
        assert len(errors) == 1 and errors[0].startswith(f"error: {llm}:{line}:3: "), errors
        assert expected in errors[0], errors
        _edit(scratch, llm, new, old)
