"""The job `run-local` runs, read from the built overlay (what Argo CD / Flux apply), not the spec.

`load_built_job` builds `overlays/<cluster>/<job>` with the real kustomize, exactly the
sub-kustomization the cluster's overlay includes, and returns the training job object together
with the ConfigMaps and Secrets the same build produced (the ones its env and volumes may
reference). The committed output must be current: running a stale overlay would test something
other than what is about to be merged, so a stale render is bad input, as for `trainops build`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainops import build
from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.facts.trainer import RUNTIME_KINDS, TRAINJOB
from trainops.jobspec.load import load_repository
from trainops.kube.trainjob import find_runtime
from trainops.render import RUNTIMES_DIR, render_repository, write
from trainops.runlocal.trainjob import as_pytorchjob, conversion_note

# Kubeflow training kinds; run-local runs PyTorchJobs, (with a local mpirun) MPIJobs, and a
# TrainJob as the PyTorchJob it amounts to.
TRAINING_KINDS = frozenset(
    {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", TRAINJOB}
)
SUPPORTED_KINDS = frozenset({"PyTorchJob", "MPIJob", TRAINJOB})
# Why a rendered kind is not run, in one line.
UNSUPPORTED = {
    "TFJob": "run-local does not run TFJobs yet: it would have to write the TF_CONFIG the"
    " operator gives each role (cluster spec and task) and run the TensorFlow program, which"
    " this machine does not have; validate it with `trainops validate` and run it on a cluster",
}


@dataclass(frozen=True)
class BuiltJob:
    """One training job as `kustomize build` prints it, and its neighbours in that build."""

    cluster: str
    job: dict[str, Any]
    """The training job object (PyTorchJob or MPIJob)."""
    source: str
    """The spec file it was rendered from (`jobs/<name>.yaml`), for messages."""
    config_maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Built ConfigMaps by name (hash suffix included, as the job references them)."""
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Built Secrets by name (usually none: secrets are created out of band)."""
    notes: tuple[str, ...] = ()
    """What run-local says about how it reads the job (a TrainJob's conversion)."""

    @property
    def kind(self) -> str:
        return str(self.job.get("kind"))

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])


def _job_name(arg: str) -> str:
    """`resnet50-ddp`, `jobs/resnet50-ddp.yaml` and `resnet50-ddp.yaml` all name one job."""
    name = Path(arg).name
    for suffix in (".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name


def load_built_job(root: Path, job_arg: str, cluster: str | None) -> BuiltJob:
    """Build `job_arg`'s overlay for `cluster` (or its only target) and return the job object."""
    repo = load_repository(root)
    name = _job_name(job_arg)
    jobs = {j.name: j for j in repo.jobs}
    if name not in jobs:
        known = ", ".join(sorted(jobs)) or "none"
        raise InputError(
            Problem.whole_file(job_arg, f"unknown job {name!r} (known: {known}; jobs/<name>.yaml)")
        )
    spec = jobs[name]
    targets = [t.cluster for t in spec.targets]
    if cluster is None:
        if len(targets) != 1:
            raise InputError(
                Problem.whole_file(
                    spec.file,
                    f"job {name!r} targets {len(targets)} clusters ({', '.join(targets)}):"
                    " pick one with --cluster NAME",
                )
            )
        cluster = targets[0]
    if cluster not in targets:
        known = ", ".join(targets)
        raise InputError(
            Problem.about(
                "--cluster",
                f"job {name!r} does not target cluster {cluster!r} (its targets: {known})",
            )
        )
    if write.check(root, render_repository(repo)):
        raise InputError(
            Problem.whole_file(
                paths.OVERLAYS_DIR,
                "rendered output is out of date: run `trainops render` first"
                " (run-local runs the committed overlay, what Argo CD / Flux would apply)",
            )
        )
    overlay = root / paths.OVERLAYS_DIR / cluster / name
    # A Trainer v2 cluster's ClusterTrainingRuntimes, which its TrainJobs reference.
    runtimes = root / paths.OVERLAYS_DIR / cluster / RUNTIMES_DIR
    streams = []
    for directory in (overlay, runtimes) if runtimes.is_dir() else (overlay,):
        try:
            streams.append(build.kustomize(directory))
        except build.KustomizeError as err:
            rel = directory.relative_to(root).as_posix()
            raise InputError(Problem.whole_file(rel, f"kustomize: {err}")) from err
    return select_job("\n---\n".join(streams), name, cluster, spec.file)


def select_job(stream: str, name: str, cluster: str, source: str) -> BuiltJob:
    """Pick the training job `name` and the ConfigMaps/Secrets out of a built YAML stream."""
    job: dict[str, Any] | None = None
    config_maps: dict[str, dict[str, Any]] = {}
    secrets: dict[str, dict[str, Any]] = {}
    runtimes: list[dict[str, Any]] = []
    for obj in yaml.safe_load_all(stream):
        if not isinstance(obj, dict):
            continue
        kind = obj.get("kind")
        obj_name = str((obj.get("metadata") or {}).get("name"))
        if kind in RUNTIME_KINDS:
            runtimes.append(obj)
        elif kind == "ConfigMap":
            config_maps[obj_name] = obj
        elif kind == "Secret":
            secrets[obj_name] = obj
        elif kind in TRAINING_KINDS and obj_name == name:
            job = obj
    if job is None:
        raise InputError(
            Problem.whole_file(source, f"the build of {cluster}/{name} holds no training job")
        )
    kind = str(job.get("kind"))
    if kind not in SUPPORTED_KINDS:
        raise InputError(
            Problem.whole_file(
                source,
                UNSUPPORTED.get(
                    kind,
                    f"run-local runs PyTorchJob, MPIJob and TrainJob, got {kind}: not supported",
                ),
            )
        )
    notes: tuple[str, ...] = ()
    if kind == TRAINJOB:
        runtime = find_runtime(job, runtimes)
        notes = (conversion_note(job, runtime),)
        job = as_pytorchjob(job, runtime)
    return BuiltJob(cluster, job, source, config_maps, secrets, notes)
