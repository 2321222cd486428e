"""The shared half of the renderer-guarantee tests (test_guarantees.py, test_guarantees_kinds.py):
each cluster's overlay of each repository, built once per module by the real kustomize, and
readers of the built objects written from the documented rules, not from trainops' model."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.render.repos import REPOS, build_overlay, read_yaml, render
from tests.tools import copy_inputs, require_kustomize

# The documented names, spelled out here (not imported) so a changed constant shows up.
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_KINDS = {"PyTorchJob", "TFJob", "MPIJob"}
# The kind each documented `framework` renders.
KIND_OF = {"pytorch": "PyTorchJob", "tensorflow": "TFJob", "mpi": "MPIJob"}


@dataclass(frozen=True)
class Build:
    """One cluster's overlay of one repository: the specs as written, and what kustomize built."""

    root: Path
    profile: dict[str, Any]
    jobs: dict[str, dict[str, Any]]  # raw job specs that target this cluster, by name
    objects: list[dict[str, Any]]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def training_jobs(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(built job, its spec) for every training job on the cluster."""
        out = [
            (o, self.jobs[o["metadata"]["name"]]) for o in self.objects if o["kind"] in JOB_KINDS
        ]
        assert sorted(o["metadata"]["name"] for o, _ in out) == sorted(self.jobs)
        return out

    @property
    def scheduler(self) -> dict[str, Any]:
        return dict(self.profile.get("scheduler", {"name": "default"}))


def _pairs() -> list[tuple[str, str]]:
    """Every (repository, Training Operator v1 cluster). A Kubeflow Trainer v2 cluster's jobs
    are TrainJobs, whose guarantees (docs/trainer-v2.md) test_trainer_v2.py checks."""
    return [
        (label, path.stem)
        for label, source in REPOS.items()
        for path in sorted((source / "clusters").glob("*.yaml"))
        if read_yaml(path).get("operator", {}).get("name", "training-operator") != "trainer"
    ]


PAIRS = _pairs()


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`build(label, cluster)`: render once per repository, kustomize-build each overlay once.

    Rendered by the CLI as a user runs it (`trainops render`, in this process, where a mutation
    tool sees it too: tests/render/repos.py). Each guarantee also ran on the files rendered
    without the CLI while the CLI ran in a subprocess: the same files (the CLI writes what
    `render_repository` returns, tests/render/test_render.py), checked twice.
    """
    require_kustomize()
    tmp = tmp_path_factory.mktemp("guarantees")

    @functools.cache
    def rendered(label: str) -> Path:
        return render(copy_inputs(REPOS[label], tmp / label))

    @functools.cache
    def get(label: str, cluster: str) -> Build:
        return load_build(rendered(label), cluster)

    return get


def load_build(root: Path, cluster: str) -> Build:
    """The specs (as plain YAML) and the kustomize-built overlay of one rendered cluster."""
    jobs = {}
    for path in sorted((root / "jobs").glob("*.yaml")):
        spec = read_yaml(path)
        if cluster in [t["cluster"] for t in spec["targets"]]:
            jobs[spec["name"]] = spec
    profile = read_yaml(root / "clusters" / f"{cluster}.yaml")
    return Build(root, profile, jobs, build_overlay(root, cluster))


def pod_templates(job: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(replica type, replicas, pod template) of every replica spec of a built job, any kind."""
    (replica_specs,) = [v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs")]
    return [
        (rtype, spec["replicas"], spec["template"]) for rtype, spec in sorted(replica_specs.items())
    ]


def data_pods(job: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """The pod templates that hold the job's data: all but an MPI Launcher, which only starts
    the ranks (README: "every pod that trains")."""
    return [t for t in pod_templates(job) if not (job["kind"] == "MPIJob" and t[0] == "Launcher")]


def target(spec: dict[str, Any], cluster: str) -> dict[str, Any]:
    return dict(next(t for t in spec["targets"] if t["cluster"] == cluster))


def pods_on(spec: dict[str, Any], cluster: str) -> int:
    """A target's `replicas` overrides the job's (README: "with overrides where they differ")."""
    return int(target(spec, cluster).get("replicas", spec["replicas"]))


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def env_by_name(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}
