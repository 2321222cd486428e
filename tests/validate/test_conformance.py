"""Conformance against ../shared/upstream (read at run time, never copied).

- every upstream example of a kind we support validates clean with our schemas
  and with the converted upstream CRDs (EXCEPTIONS lists the real mistakes);
- our schemas agree with the upstream CRDs on every property path and type under `spec`;
- each tightening (TIGHTENINGS) is rejected by ours and accepted by the upstream CRD,
  and names the operator rule it mirrors;
- the seeds' schema mistakes are rejected.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import UPSTREAM, require_upstream
from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.validate.load import load_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import CRD_SCHEMA_DIR, SchemaStore, crd_schema_file

EXAMPLE_DIRS = ("training-operator", "mpi-operator", "volcano", "trainer")

# (file, schema source) -> why the upstream example is rejected. "both" = ours and converted.
EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "examples__xgboost__smoke-dist__xgboostjob_v1alpha1_rabit_test.yaml",
        "both",
    ): "stray `apiVersion`/`kind` keys inside the pod templates (a PodTemplateSpec has neither)",
    (
        "examples__v2beta1__pi__pi-intel.yaml",
        "converted",
    ): "empty `command:` (null) on the worker container; the CRD says array. The core"
    " PodTemplateSpec schema our schemas $ref is nullable there, as the API server is",
    (
        "examples__v2beta1__pi__pi-mpich.yaml",
        "converted",
    ): "empty `command:` (null) on the worker container, as in pi-intel.yaml",
}


def _examples() -> list[Path]:
    if not UPSTREAM.is_dir():
        return []
    return sorted(p for d in EXAMPLE_DIRS for p in (UPSTREAM / "examples" / d).glob("*.yaml"))


def test_upstream_examples_are_present() -> None:
    """The parametrised tests below collect nothing without them: fail under CI instead."""
    require_upstream()
    assert len(_examples()) >= 10


def _errors(manifests: list[Manifest], store: SchemaStore) -> list[Finding]:
    return validate_manifests(manifests, None, store, checkers=[])


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_upstream_example_validates(path: Path, ours: SchemaStore, converted: SchemaStore) -> None:
    manifests = load_manifests([path])
    for label, store in (("ours", ours), ("converted", converted)):
        findings = _errors(manifests, store)
        reason = EXCEPTIONS.get((path.name, label)) or EXCEPTIONS.get((path.name, "both"))
        if reason:
            assert findings, f"{path.name} ({label}) is listed as an exception but is clean now"
        else:
            assert not findings, [f.message for f in findings]


# ---------------------------------------------------------------- path/type agreement

SUPPORTED = [
    ("kubeflow.org", "v1", "PyTorchJob", "kubeflow.org/pytorchjobs.yaml"),
    ("kubeflow.org", "v1", "TFJob", "kubeflow.org/tfjobs.yaml"),
    ("kubeflow.org", "v1", "XGBoostJob", "kubeflow.org/xgboostjobs.yaml"),
    ("kubeflow.org", "v1", "PaddleJob", "kubeflow.org/paddlejobs.yaml"),
    ("kubeflow.org", "v1", "JAXJob", "kubeflow.org/jaxjobs.yaml"),
    ("kubeflow.org", "v1", "MPIJob", "kubeflow.org/mpijobs.yaml"),
    ("kubeflow.org", "v2beta1", "MPIJob", "kubeflow.org/mpijobs-v2beta1.yaml"),
    ("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainer.kubeflow.org/trainjobs.yaml"),
    (
        "trainer.kubeflow.org",
        "v1alpha1",
        "TrainingRuntime",
        "trainer.kubeflow.org/trainingruntimes.yaml",
    ),
    (
        "trainer.kubeflow.org",
        "v1alpha1",
        "ClusterTrainingRuntime",
        "trainer.kubeflow.org/clustertrainingruntimes.yaml",
    ),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobset.x-k8s.io/jobsets.yaml"),
    ("scheduling.volcano.sh", "v1beta1", "PodGroup", "scheduling.volcano.sh/podgroups.yaml"),
    ("scheduling.volcano.sh", "v1beta1", "Queue", "scheduling.volcano.sh/queues.yaml"),
    ("batch.volcano.sh", "v1alpha1", "Job", "batch.volcano.sh/jobs.yaml"),
    ("kueue.x-k8s.io", "v1beta1", "LocalQueue", "kueue.x-k8s.io/localqueues.yaml"),
    ("kueue.x-k8s.io", "v1beta2", "LocalQueue", "kueue.x-k8s.io/localqueues.yaml"),
    ("kueue.x-k8s.io", "v1beta1", "ClusterQueue", "kueue.x-k8s.io/clusterqueues.yaml"),
    ("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "kueue.x-k8s.io/clusterqueues.yaml"),
    ("monitoring.coreos.com", "v1", "ServiceMonitor", "monitoring.coreos.com/servicemonitors.yaml"),
    ("monitoring.coreos.com", "v1", "PodMonitor", "monitoring.coreos.com/podmonitors.yaml"),
    ("argoproj.io", "v1alpha1", "Application", "argoproj.io/applications.yaml"),
    ("argoproj.io", "v1alpha1", "ApplicationSet", "argoproj.io/applicationsets.yaml"),
    ("argoproj.io", "v1alpha1", "AppProject", "argoproj.io/appprojects.yaml"),
    (
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "Kustomization",
        "kustomize.toolkit.fluxcd.io/kustomizations.yaml",
    ),
    (
        "source.toolkit.fluxcd.io",
        "v1",
        "GitRepository",
        "source.toolkit.fluxcd.io/gitrepositories.yaml",
    ),
]
# (kind, path pattern) -> why that part of our schema is deliberately open (any value), so the
# agreement test skips it and everything under it. In a pattern `*` matches anything (brackets are
# literal); each must match a path in the upstream CRD (the list cannot go stale).
_RARE_GENERATOR = (
    "rarer ApplicationSet generator, kept an open object (not used by trainops; the CRD types it"
    " in full, our schema does not): {}"
)
OPEN_PARTS: dict[tuple[str, str], str] = {
    ("ApplicationSet", "spec.generators[]*.list.elements[]"): "list generator parameter sets are"
    " free-form: x-kubernetes-preserve-unknown-fields with no type in the CRD, untyped in ours",
    ("ApplicationSet", "spec.generators[].*.generators[].matrix"): "a matrix generator nested in"
    " matrix/merge is raw JSON in the CRD (apiextensionsv1.JSON, preserve-unknown-fields)",
    ("ApplicationSet", "spec.generators[].*.generators[].merge"): "a merge generator nested in"
    " matrix/merge is raw JSON in the CRD (apiextensionsv1.JSON, preserve-unknown-fields)",
    ("ApplicationSet", "spec.generators[]*.scmProvider"): _RARE_GENERATOR.format("scmProvider"),
    ("ApplicationSet", "spec.generators[]*.pullRequest"): _RARE_GENERATOR.format("pullRequest"),
    ("ApplicationSet", "spec.generators[]*.plugin"): _RARE_GENERATOR.format("plugin"),
    ("ApplicationSet", "spec.generators[]*.clusterDecisionResource"): _RARE_GENERATOR.format(
        "clusterDecisionResource (duck-typed)"
    ),
}
# Core definitions that stand for an upstream `x-kubernetes-int-or-string` field.
INT_OR_STRING_REFS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
}


@functools.cache
def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def _resolve(ref: str, base: Path) -> tuple[Any, Path]:
    file_part, _, fragment = ref.partition("#")
    target = (base.parent / file_part).resolve() if file_part else base
    doc: Any = _read_json(target)
    for part in fragment.strip("/").split("/") if fragment.strip("/") else []:
        doc = doc[part]
    return doc, target


def _ours(schema: Any, base: Path, path: str, out: dict[str, set[str]]) -> None:
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if ref:
        if "_kubernetes/" in ref:
            out.setdefault(path, set()).add("core:" + ref.rpartition("/")[2])
            return
        target, file = _resolve(ref, base)
        _ours(target, file, path, out)
    for sub in schema.get("allOf", []):
        _ours(sub, base, path, out)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        out.setdefault(path, set()).update(types)
    for name, sub in (schema.get("properties") or {}).items():
        # A map with named keys (replica types) refines the map's values: same path.
        key = "{}" if "propertyNames" in schema else f".{name}"
        _ours(sub, base, f"{path}{key}", out)
    if isinstance(schema.get("items"), dict):
        _ours(schema["items"], base, f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _ours(schema["additionalProperties"], base, f"{path}{{}}", out)


def _upstream(schema: dict[str, Any], path: str, out: dict[str, str]) -> None:
    out[path] = (
        "int-or-string" if schema.get("x-kubernetes-int-or-string") else schema.get("type", "")
    )
    for name, sub in (schema.get("properties") or {}).items():
        _upstream(sub, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        _upstream(schema["items"], f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _upstream(schema["additionalProperties"], f"{path}{{}}", out)


def _prefixes(path: str) -> list[str]:
    """`spec.a[].b` -> `spec`, `spec.a`, `spec.a[]`, `spec.a[].b`."""
    cuts = [i for i, c in enumerate(path) if c in ".[{" and i > 0]
    return [path[:i] for i in cuts] + [path]


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def _is_open(kind: str, path: str) -> bool:
    patterns = [_glob(p) for (k, p) in OPEN_PARTS if k == kind]
    return any(g.fullmatch(prefix) for prefix in _prefixes(path) for g in patterns)


def _covered_by_core(path: str, ours: dict[str, set[str]]) -> bool:
    """Below a path where ours `$ref`s a core definition (checked by the core schema)."""
    return any(
        any(t.startswith("core:") for t in ours.get(prefix, ())) for prefix in _prefixes(path)[:-1]
    )


@pytest.mark.parametrize("group,version,kind,crd", SUPPORTED, ids=str)
def test_schema_agrees_with_upstream_crd(
    group: str, version: str, kind: str, crd: str, upstream: Path
) -> None:
    # libyaml when available: the ApplicationSet CRD is 23k lines (~35 s with the pure loader).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = list(yaml.load_all((upstream / "crds" / crd).read_text(), Loader=loader))
    raw = next(
        v["schema"]["openAPIV3Schema"]
        for d in docs
        for v in d["spec"]["versions"]
        if v["name"] == version
    )
    theirs: dict[str, str] = {}
    _upstream(raw["properties"]["spec"], "spec", theirs)
    file = crd_schema_file(CRD_SCHEMA_DIR, (group, version, kind))
    ours: dict[str, set[str]] = {}
    _ours(json.loads(file.read_text())["properties"]["spec"], file, "spec", ours)

    problems = [
        f"OPEN_PARTS {pattern!r} matches no upstream path"
        for (k, pattern) in OPEN_PARTS
        if k == kind and not any(_glob(pattern).fullmatch(p) for p in theirs)
    ]
    for path, their_type in sorted(theirs.items()):
        if _covered_by_core(path, ours) or _is_open(kind, path):
            continue
        if path not in ours:
            problems.append(f"{path}: missing from our schema (upstream {their_type})")
            continue
        mine = ours[path]
        core = {t[5:] for t in mine if t.startswith("core:")}
        if their_type == "int-or-string":
            ok = bool(core & INT_OR_STRING_REFS) or {"integer", "string"} <= mine
        elif core:
            ok = their_type in ("object", "array") and not core & INT_OR_STRING_REFS
        else:
            ok = their_type in mine
        if not ok:
            problems.append(f"{path}: upstream {their_type}, ours {sorted(mine)}")
    for path in sorted(ours):
        if path not in theirs and not _covered_by_core(path, ours) and not _is_open(kind, path):
            problems.append(f"{path}: in our schema but not upstream")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- tightenings

PYTORCH = "training-operator/examples__pytorch__simple.yaml"
PYTORCH_ELASTIC = "training-operator/examples__pytorch__elastic__echo__echo.yaml"
TFJOB = "training-operator/examples__tensorflow__dist-mnist__tf_job_mnist.yaml"
MPI_V2 = "mpi-operator/examples__v2beta1__pi__pi.yaml"
TRAINJOB = "trainer/examples__yaml__01-multi-node.yaml"
TRAINJOB_PATCHES = "trainer/examples__yaml__02-runtime-patches.yaml"
TORCH_RUNTIME = "trainer/manifests__base__runtimes__torch_distributed.yaml"
_PATCH_POD = (
    "spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0,
    "template", "spec", "template", "spec",
)  # fmt: skip

# (example, path to set, value, the operator rule it mirrors)
TIGHTENINGS: list[tuple[str, tuple[str | int, ...], Any, str]] = [
    (
        PYTORCH,
        ("spec", "pytorchReplicaSpecs", "Worker", "restartPolicy"),
        "Sometimes",
        "RestartPolicy is one of Always/OnFailure/Never/ExitCode (kubeflow.org/v1 common_types.go)",
    ),
    (
        PYTORCH,
        ("spec", "runPolicy", "cleanPodPolicy"),
        "Some",
        "CleanPodPolicy is one of All/Running/None (kubeflow.org/v1 common_types.go)",
    ),
    (
        PYTORCH_ELASTIC,
        ("spec", "elasticPolicy", "rdzvBackend"),
        "zookeeper",
        "RDZVBackend is one of c10d/etcd/etcd-v2 (kubeflow.org/v1 pytorch_types.go)",
    ),
    (
        PYTORCH,
        ("spec", "pytorchReplicaSpecs", "Master", "replicas"),
        2,
        "PyTorchJob webhook: Master replicas must be 1",
    ),
    (
        PYTORCH,
        ("spec", "pytorchReplicaSpecs", "Launcher"),
        {"replicas": 1},
        "PyTorchJob webhook: replica types are Master and Worker only",
    ),
    (
        PYTORCH,
        ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0, "name"),
        "trainer",
        "PyTorchJob webhook: a container named `pytorch` must exist (the operator injects"
        " MASTER_ADDR etc. into it)",
    ),
    (
        TFJOB,
        ("spec", "tfReplicaSpecs", "Chief"),
        {"replicas": 2},
        "TFJob webhook: Chief/Master/Evaluator may have at most one replica",
    ),
    (
        PYTORCH,
        ("spec", "runPolicy", "managedBy"),
        "someone-else",
        "RunPolicy webhook: managedBy is kubeflow.org/training-operator or"
        " kueue.x-k8s.io/multikueue",
    ),
    (
        MPI_V2,
        ("spec", "mpiReplicaSpecs", "Launcher", "replicas"),
        2,
        "mpi-operator validation: the Launcher must have exactly one replica",
    ),
    (
        MPI_V2,
        ("spec", "launcherCreationPolicy"),
        "Later",
        "mpi-operator: launcherCreationPolicy is AtStartup or WaitForWorkersReady",
    ),
    (
        TRAINJOB,
        ("spec", "runtimeRef", "kind"),
        "Deployment",
        "Trainer v2: a TrainJob references a TrainingRuntime or ClusterTrainingRuntime only",
    ),
    (
        TRAINJOB,
        ("spec", "trainer", "numNodes"),
        0,
        "trainops: a training step needs at least one node (numNodes 0 starts no pod; the CRD"
        " sets no minimum)",
    ),
    (
        TORCH_RUNTIME,
        ("spec", "mlPolicy", "mpi"),
        {},
        "Trainer v2 CRD CEL rule: only one of torch, mpi, jax, xgboost, flux (the converted"
        " CRD carries no CEL)",
    ),
    (
        TRAINJOB_PATCHES,
        (*_PATCH_POD, "containers"),
        [{"name": "node", "env": [{"name": "X", "value": "1"}]}],
        "Trainer v2 webhook: runtime patches may not set env of the node container"
        " (trainer.env is the place)",
    ),
]


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {}) if isinstance(data, dict) else data[part]
    data[path[-1]] = value


@pytest.mark.parametrize("example,path,value,rule", TIGHTENINGS, ids=lambda v: str(v)[:40])
def test_tightening(  # noqa: PLR0917 (parametrized cases plus fixtures)
    example: str,
    path: tuple[str | int, ...],
    value: Any,
    rule: str,
    upstream: Path,
    ours: SchemaStore,
    converted: SchemaStore,
) -> None:
    [manifest] = load_manifests([upstream / "examples" / example])
    _set(manifest.data, path, value)
    mutated = Manifest(copy.deepcopy(manifest.data), manifest.file, manifest.document)
    assert _errors([mutated], ours), f"ours should reject: {rule}"
    assert not _errors([mutated], converted), f"the upstream CRD accepts it (a tightening): {rule}"


def test_seed_scheduler_name_under_spec_is_rejected(upstream: Path, ours: SchemaStore) -> None:
    """The seed article puts `schedulerName: volcano` directly under a PyTorchJob's spec."""
    [manifest] = load_manifests([upstream / "examples" / PYTORCH])
    manifest.data["spec"]["schedulerName"] = "volcano"
    findings = _errors([manifest], ours)
    assert [f.message for f in findings] == [
        "spec.schedulerName: unknown field (not in the schema)"
    ]
