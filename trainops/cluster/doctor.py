"""`trainops doctor --cluster NAME`: what the cluster profile assumes, checked against the live
API before the first job runs there, one line per check.

The API server's version against `kubernetesVersion`; every custom kind the overlay renders
(and those its jobs' operators need: JobSet under Trainer v2, Kueue's Workload) served at the
version rendered; the training operator's Deployment and the flags the profile relies on;
Kueue's Configuration against `installed.kueue`; the GPU, RDMA device plugins and DCGM exporter
on the nodes (doctor_nodes.py); the delivery tool and what its service account may do
(doctor_access.py). A check that cannot be made (RBAC forbids reading what it needs) is
`skip` with the reason, never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import yaml

from trainops.cluster import kinds, probes
from trainops.cluster.client import Client, Resource
from trainops.cluster.errors import ClusterError
from trainops.core.manifest import Manifest
from trainops.facts.kubeflow import MPIJOB_V2BETA1
from trainops.facts.schedulers import KUEUE_FRAMEWORKS, kueue_api_version
from trainops.facts.trainer import TRAINER_API, TRAINJOB
from trainops.jobspec.model import ClusterProfile

Status = Literal["ok", "fail", "skip"]
DEPLOYMENT = ("apps/v1", "Deployment")
CONFIGMAP = ("v1", "ConfigMap")
VOLCANO_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
# JobSet runs a TrainJob (Kubeflow Trainer v2.x depends on JobSet v1alpha2).
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
# Groups the API server serves itself (no CRD): not checked as CRDs.
_BUILT_IN = re.compile(r"^([a-z]+|[a-z.]+\.k8s\.io)$")
# The operators' Deployments, by the name their manifests give them (kubeflow/trainer v1.9
# manifests/base/deployment.yaml; kubeflow/mpi-operator v0.8.0 manifests/base/deployment.yaml;
# kubeflow/trainer v2.x manifests/base/manager/manager.yaml; kueue config/components/manager).
TRAINING_OPERATOR = "training-operator"
MPI_OPERATOR = "mpi-operator"
TRAINER_CONTROLLER = "kubeflow-trainer-controller-manager"
KUEUE_CONTROLLER = "kueue-controller-manager"
# Kueue's Configuration: ConfigMap `kueue-manager-config`, key `controller_manager_config.yaml`
# (kueue config/components/manager/kustomization.yaml, namespace kueue-system by default).
KUEUE_CONFIG = "kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
# The schemes the Training Operator runs (`--enable-scheme`, v1.9 cmd/training-operator.v1).
_SCHEMES = {"PyTorchJob": "pytorchjob", "TFJob": "tfjob", "MPIJob": "mpijob"}


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: Status
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"check": self.name, "status": self.status, "message": self.message}

    def line(self) -> str:
        return (
            f"{self.status.upper() if self.status == 'fail' else self.status:<5} {self.name}:"
            + (f" {self.message}")
        )


def ok(name: str, message: str) -> Check:
    return Check(name, "ok", message)


def fail(name: str, message: str) -> Check:
    return Check(name, "fail", message)


def skip(name: str, message: str) -> Check:
    return Check(name, "skip", message)


def guarded(name: str, check: Callable[[], Iterator[Check]]) -> Iterator[Check]:
    """`check()`'s lines; a read the cluster refuses (RBAC, a kind it lacks) is one `skip`."""
    try:
        yield from list(check())
    except ClusterError as err:
        yield skip(name, f"could not check: {err}")


def server_version(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    """The API server's minor version against the profile's `kubernetesVersion` (validation
    uses that version's schemas)."""
    found = probes.server_version(client)
    git = str(found.get("gitVersion") or f"v{found.get('major')}.{found.get('minor')}")
    match = re.match(r"^v?(\d+)\.(\d+)", git)
    want = profile.kubernetes_version
    name = "server version"
    if match is None:
        yield fail(name, f"the API server reports version {git!r}, which is not vX.Y")
    elif f"{match.group(1)}.{match.group(2)}" == want:
        yield ok(name, f"{git} (kubernetesVersion {want})")
    else:
        have = f"{match.group(1)}.{match.group(2)}"
        yield fail(
            name,
            f"the API server runs {git}, the profile says kubernetesVersion {want}: validation"
            f' checks against {want}\'s schemas; set `kubernetesVersion: "{have}"` in'
            f" {profile.file}",
        )


def custom_kinds(profile: ClusterProfile, built: list[Manifest]) -> list[tuple[str, str]]:
    """(apiVersion, kind) of every custom resource the overlay renders, and the ones its
    operators need that Git does not hold (Kueue's Workload, Volcano's PodGroup, Trainer v2's
    JobSet)."""
    found = {(m.api_version, m.kind) for m in built}
    if profile.scheduler.kind == "kueue":
        found.add((kueue_api_version(profile.installed.kueue_minor), "Workload"))
    if profile.scheduler.kind == "volcano":  # the operators make the gang's PodGroup
        found.add(VOLCANO_PODGROUP)
    if profile.operator.trainer_v2 or (TRAINER_API, TRAINJOB) in found:
        found.add(JOBSET)
    return sorted((api, kind) for api, kind in found if not _built_in(api))


def _built_in(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return not group or bool(_BUILT_IN.match(group))


def crds(client: Client, profile: ClusterProfile, built: list[Manifest]) -> Iterator[Check]:
    for api_version, kind in custom_kinds(profile, built):
        name = f"crd {kind} ({api_version})"
        if client.resource(api_version, kind) is None:
            yield fail(name, client.not_served(api_version, kind))
        else:
            yield ok(name, f"served ({kinds.provider(api_version)})")


def find_deployment(client: Client, name: str) -> dict[str, Any] | None:
    """The Deployment `name` in any namespace (the operators' manifests fix the name, the
    installer picks the namespace)."""
    listed = client.list(client.require(*DEPLOYMENT), None)
    return next((d for d in listed if (d.get("metadata") or {}).get("name") == name), None)


def ready(workload: dict[str, Any]) -> tuple[bool, str]:
    """Whether a Deployment has its replicas ready, and where it is: `ns/name (1/1 ready)`."""
    meta, status = workload.get("metadata") or {}, workload.get("status") or {}
    want = (workload.get("spec") or {}).get("replicas", 1)
    have = int(status.get("readyReplicas") or 0)
    where = f"{meta.get('namespace')}/{meta.get('name')} ({have}/{want} ready)"
    return have >= max(1, int(want or 0)), where


def args_of(deployment: dict[str, Any]) -> list[str]:
    """The command and args of the Deployment's containers, one flag per word
    (`--flag value` read as `--flag=value`)."""
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    words: list[str] = []
    for c in spec.get("containers") or []:
        words += [str(w) for w in (c.get("command") or []) + (c.get("args") or [])]
    out: list[str] = []
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word.startswith("-") and "=" not in word and nxt and not nxt.startswith("-"):
            out.append(f"--{word.lstrip('-')}={nxt}")
        elif word.startswith("-"):
            out.append(f"--{word.lstrip('-')}")
    return out


def _flag(args: list[str], flag: str) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{flag}=")]


def operators(client: Client, profile: ClusterProfile, built: list[Manifest]) -> Iterator[Check]:
    """The operator Deployments the rendered jobs need, ready, with the flags they rely on."""
    rendered = {(m.api_version, m.kind) for m in built if kinds.is_training(m.api_version, m.kind)}
    wanted: list[tuple[str, list[tuple[str, str]]]] = []
    v1 = sorted(k for a, k in rendered if a == "kubeflow.org/v1")
    if v1:
        wanted.append((TRAINING_OPERATOR, [(a, k) for a, k in rendered if a == "kubeflow.org/v1"]))
    if (MPIJOB_V2BETA1, "MPIJob") in rendered:
        wanted.append((MPI_OPERATOR, [(MPIJOB_V2BETA1, "MPIJob")]))
    if (TRAINER_API, TRAINJOB) in rendered:
        wanted.append((TRAINER_CONTROLLER, [(TRAINER_API, TRAINJOB)]))
    if profile.scheduler.kind == "kueue":
        wanted.append((KUEUE_CONTROLLER, []))
    for name, jobs in wanted:
        yield from guarded(f"operator {name}", partial(_operator, client, profile, name, jobs))


def _operator(
    client: Client, profile: ClusterProfile, name: str, jobs: list[tuple[str, str]]
) -> Iterator[Check]:
    check = f"operator {name}"
    found = find_deployment(client, name)
    needed = ", ".join(sorted({k for _, k in jobs})) or "Kueue's admission"
    if found is None:
        yield fail(check, f"no Deployment {name} in any namespace: nothing runs {needed} here")
        return
    up, where = ready(found)
    if not up:
        yield fail(check, f"{where}: not ready, so {needed} do not run")
        return
    args = args_of(found)
    problems = []
    volcano = profile.scheduler.kind == "volcano"
    if name == TRAINING_OPERATOR:
        schemes = {s.lower() for s in _flag(args, "enable-scheme")}
        missing = sorted({_SCHEMES[k] for _, k in jobs if k in _SCHEMES} - schemes)
        if schemes and missing:
            problems.append(f"--enable-scheme leaves out {', '.join(missing)}")
        if volcano and _flag(args, "gang-scheduler-name") != ["volcano"]:
            problems.append(
                "no --gang-scheduler-name=volcano: the operator creates no PodGroup and the"
                " pods wait for a gang Volcano never forms"
            )
    if name == MPI_OPERATOR and volcano and _flag(args, "gang-scheduling") != ["volcano"]:
        problems.append("no --gang-scheduling=volcano: MPIJobs get no PodGroup")
    if name == KUEUE_CONTROLLER:
        problems += _kueue_release(found, profile)
    if problems:
        yield fail(check, f"{where}: {'; '.join(problems)}")
    else:
        yield ok(check, where)


def _kueue_release(deployment: dict[str, Any], profile: ClusterProfile) -> list[str]:
    """The Kueue release its image tag says (`registry.k8s.io/kueue/kueue:v0.19.2`) against
    `installed.kueue.version` (its default integrations and API version follow it)."""
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in spec.get("containers") or []:
        tag = re.search(r"/kueue:v?(\d+)\.(\d+)", str(c.get("image") or ""))
        if tag and (int(tag.group(1)), int(tag.group(2))) != profile.installed.kueue_minor:
            return [
                f"it runs Kueue {tag.group(1)}.{tag.group(2)} ({c.get('image')}), the profile"
                f' says `installed.kueue.version: "{profile.installed.kueue_version}"`: its'
                " default integrations and API version are what validation assumes; fix the"
                " profile"
            ]
    return []


def kueue_config(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    """Kueue's Configuration `integrations.frameworks` against `installed.kueue`."""
    if profile.scheduler.kind != "kueue":
        return
    yield from guarded("kueue integrations", lambda: _kueue(client, profile))


def _kueue(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    name = "kueue integrations"
    resource: Resource = client.require(*CONFIGMAP)
    listed = client.list(resource, None)
    config = next(
        (c for c in listed if (c.get("metadata") or {}).get("name") == KUEUE_CONFIG), None
    )
    text = ((config or {}).get("data") or {}).get(KUEUE_CONFIG_KEY)
    if not isinstance(text, str):
        yield fail(
            name, f"no ConfigMap {KUEUE_CONFIG} with {KUEUE_CONFIG_KEY}: is Kueue installed?"
        )
        return
    try:
        parsed = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        yield fail(name, f"{KUEUE_CONFIG}: {KUEUE_CONFIG_KEY} is not YAML ({err})")
        return
    frameworks = set(((parsed.get("integrations") or {}).get("frameworks")) or [])
    assumed = profile.installed.kueue_frameworks
    ours = set(KUEUE_FRAMEWORKS.values())
    missing = sorted((assumed & ours) - frameworks)
    extra = sorted((frameworks & ours) - assumed)
    where = f"ConfigMap {(config or {}).get('metadata', {}).get('namespace')}/{KUEUE_CONFIG}"
    if missing:
        yield fail(
            name,
            f"{where} does not enable {', '.join(missing)}, which the profile's"
            " `installed.kueue` assumes: jobs of those kinds run unqueued, outside the quota",
        )
    elif extra:
        yield fail(
            name,
            f"{where} enables {', '.join(extra)}, which the profile's `installed.kueue` leaves"
            " out: list them in `installed.kueue.integrations` so validation knows",
        )
    else:
        yield ok(name, f"{where}: {', '.join(sorted(frameworks & ours)) or 'none of ours'}")
