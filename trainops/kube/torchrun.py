"""How many nodes and processes a job's torchrun (or deepspeed) launches ask for, as written:
`--nnodes` per launch, and processes per pod from the launcher's options, a PyTorchJob's
`nprocPerNode` (or the deprecated `elasticPolicy.nProcPerNode`) and a TrainJob's
`numProcPerNode`. Read here once for every rule that compares them with the pods and GPUs.
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.values import as_dict, as_int
from trainops.kube.launch import DEEPSPEED, LEGACY_LAUNCH, TORCHRUN, launches
from trainops.kube.objects import Object
from trainops.kube.pods import PodTemplate


def nnodes_range(value: str) -> tuple[int, int] | None:
    """torchrun's `--nnodes`: `N` or `MIN:MAX`; None for what we cannot read (`$(PET_NNODES)`)."""
    low, _, high = value.partition(":")
    a, b = as_int(low), as_int(high or low)
    return (a, b) if a is not None and b is not None else None


def torchrun_nnodes(obj: Object) -> Iterator[tuple[str | None, str, tuple[str | int, ...]]]:
    """(replica type, --nnodes value, its path) of every torchrun launch in the job."""
    for pod in obj.pods:
        for c in pod.containers():
            for launch in launches(c):
                if launch.tool not in {TORCHRUN, LEGACY_LAUNCH}:
                    continue
                nnodes = launch.option("nnodes")
                if nnodes is not None:
                    yield pod.replica_type, nnodes[0], nnodes[1]


def nproc_per_pod(obj: Object, pod: PodTemplate) -> list[tuple[int | str, tuple[str | int, ...]]]:
    """Processes per pod as written: launcher options, then the PyTorchJob's nprocPerNode or
    the TrainJob's numProcPerNode (the Trainer passes it to torchrun as PET_NPROC_PER_NODE)."""
    found: list[tuple[int | str, tuple[str | int, ...]]] = []
    for c in pod.containers():
        for launch in launches(c):
            opt = None
            if launch.tool in {TORCHRUN, LEGACY_LAUNCH}:
                opt = launch.option("nproc_per_node")
            elif launch.tool == DEEPSPEED:
                opt = launch.option("num_gpus")
            if opt is not None:
                value = as_int(opt[0])
                found.append((value if value is not None else opt[0], opt[1]))
    trainer = as_dict(obj.spec.get("trainer")) if obj.is_trainjob else {}
    if "numProcPerNode" in trainer:
        raw = trainer["numProcPerNode"]
        value = as_int(raw)
        found.append(
            (value if value is not None else str(raw), ("spec", "trainer", "numProcPerNode"))
        )
    if obj.kind == "PyTorchJob" and obj.is_kubeflow_job:
        if "nprocPerNode" in obj.spec:
            raw = obj.spec["nprocPerNode"]
            value = as_int(raw)
            found.append((value if value is not None else str(raw), ("spec", "nprocPerNode")))
        elastic = as_dict(obj.spec.get("elasticPolicy"))
        if "nProcPerNode" in elastic:
            raw = elastic["nProcPerNode"]
            value = as_int(raw)
            found.append(
                (
                    value if value is not None else str(raw),
                    ("spec", "elasticPolicy", "nProcPerNode"),
                )
            )
    return found
