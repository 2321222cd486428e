"""Every property of every schema trainops ships says what it is for.

The schemas are the one source of the specs' docs: editors show each `description` on hover and
in completion (the `$schema` line of every job and profile), so a property without one is a
field a user has to guess. The same holds for the schemas `validate` checks built objects
against (`schemas/crds/`, authored from each project's published API, and
`deepspeed.schema.json`, derived from DeepSpeed's config classes): their descriptions are what
a finding's reader looks up. A property that is only a `$ref` takes the description of what it
references: a definition in the same file, in another of our files (`../_shared/...`), or in
Kubernetes' own definitions (`../_kubernetes/_definitions.json`, kubernetes-validate's).

The spec schemas are complete. The others are not yet (issue 27): `UNDESCRIBED` holds how
many properties each still lacks, and may only go down. A new property without a description
fails here; so does a count that fell, until it is lowered here to what remains.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from trainops.core import paths
from trainops.facts.kubernetes_schemas import core_schema_dir
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION

# The spec schemas people write against: complete, and kept so.
SPEC_NAMES = ("trainingjob", "clusterprofile", "trainops")
SPEC_SCHEMAS = [paths.SCHEMA_DIR / f"{name}.schema.json" for name in SPEC_NAMES]
ALL_SCHEMAS = sorted(paths.SCHEMA_DIR.rglob("*.json"))

# Properties still without a description, per schema (relative to trainops/schemas/).
UNDESCRIBED: dict[str, int] = {
    "crds/_shared/argoproj.io.json": 134,
    "crds/_shared/jobset.x-k8s.io.json": 32,
    "crds/_shared/kubeflow.org.json": 0,
    "crds/_shared/monitoring.coreos.com.json": 96,
    "crds/_shared/ray.io.json": 0,
    "crds/_shared/toolkit.fluxcd.io.json": 1,
    "crds/_shared/trainer.kubeflow.org.json": 10,
    "crds/argoproj.io/application_v1alpha1.json": 2,
    "crds/argoproj.io/applicationset_v1alpha1.json": 53,
    "crds/argoproj.io/appproject_v1alpha1.json": 63,
    "crds/argoproj.io/clusterworkflowtemplate_v1alpha1.json": 0,
    "crds/argoproj.io/cronworkflow_v1alpha1.json": 0,
    "crds/argoproj.io/workflow_v1alpha1.json": 0,
    "crds/argoproj.io/workflowtemplate_v1alpha1.json": 0,
    "crds/batch.volcano.sh/job_v1alpha1.json": 48,
    "crds/external-secrets.io/externalsecret_v1.json": 43,
    "crds/grafana.integreatly.org/grafanadashboard_v1beta1.json": 71,
    "crds/jobset.x-k8s.io/jobset_v1alpha2.json": 3,
    "crds/k8s.cni.cncf.io/networkattachmentdefinition_v1.json": 3,
    "crds/leaderworkerset.x-k8s.io/leaderworkerset_v1.json": 0,
    "crds/kubeflow.org/jaxjob_v1.json": 0,
    "crds/kubeflow.org/mpijob_v1.json": 0,
    "crds/kubeflow.org/mpijob_v2beta1.json": 0,
    "crds/kubeflow.org/paddlejob_v1.json": 0,
    "crds/kubeflow.org/pytorchjob_v1.json": 0,
    "crds/kubeflow.org/tfjob_v1.json": 0,
    "crds/kubeflow.org/xgboostjob_v1.json": 0,
    "crds/kueue.x-k8s.io/clusterqueue_v1beta1.json": 34,
    "crds/kueue.x-k8s.io/clusterqueue_v1beta2.json": 38,
    "crds/kueue.x-k8s.io/localqueue_v1beta1.json": 0,
    "crds/kueue.x-k8s.io/localqueue_v1beta2.json": 0,
    "crds/kueue.x-k8s.io/resourceflavor_v1beta1.json": 0,
    "crds/kueue.x-k8s.io/resourceflavor_v1beta2.json": 0,
    "crds/kueue.x-k8s.io/workload_v1beta1.json": 13,
    "crds/kueue.x-k8s.io/workload_v1beta2.json": 13,
    "crds/kustomize.toolkit.fluxcd.io/kustomization_v1.json": 75,
    "crds/monitoring.coreos.com/podmonitor_v1.json": 4,
    "crds/notification.toolkit.fluxcd.io/alert_v1beta3.json": 15,
    "crds/notification.toolkit.fluxcd.io/provider_v1beta3.json": 14,
    "crds/monitoring.coreos.com/prometheusrule_v1.json": 18,
    "crds/monitoring.coreos.com/servicemonitor_v1.json": 6,
    "crds/ray.io/raycluster_v1.json": 0,
    "crds/ray.io/rayjob_v1.json": 0,
    "crds/resource.nvidia.com/computedomain_v1beta1.json": 0,
    "crds/scheduling.volcano.sh/podgroup_v1beta1.json": 9,
    "crds/scheduling.volcano.sh/queue_v1beta1.json": 24,
    "crds/source.toolkit.fluxcd.io/gitrepository_v1.json": 22,
    "crds/trainer.kubeflow.org/clustertrainingruntime_v1alpha1.json": 0,
    "crds/trainer.kubeflow.org/trainingruntime_v1alpha1.json": 0,
    "crds/trainer.kubeflow.org/trainjob_v1alpha1.json": 0,
    "deepspeed.schema.json": 150,
}


@cache
def _document(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _target(ref: str, here: Path) -> Any:
    """What `ref` points at, from the schema file `here`."""
    file, _, fragment = ref.partition("#")
    if file.endswith("_kubernetes/_definitions.json"):
        doc = _document(core_schema_dir(DEFAULT_KUBERNETES_VERSION) / "_definitions.json")
    else:
        doc = _document((here.parent / file).resolve() if file else here)
    node = doc
    for part in (p for p in fragment.split("/") if p):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node


def _described(prop: dict[str, Any], here: Path) -> bool:
    if "description" in prop:
        return True
    target = _target(prop["$ref"], here) if "$ref" in prop else {}
    return isinstance(target, dict) and "description" in target


def undocumented(path: Path) -> list[str]:
    """The JSON path of every property of the schema at `path` without a description."""
    return list(_undocumented(_document(path), "", path))


def _undocumented(node: Any, where: str, here: Path) -> Iterator[str]:
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if isinstance(prop, dict) and not _described(prop, here):
                yield f"{where}.{name}"
        for key, child in node.items():
            yield from _undocumented(child, f"{where}/{key}", here)
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _undocumented(child, f"{where}[{index}]", here)


def _name(path: Path) -> str:
    return path.relative_to(paths.SCHEMA_DIR).as_posix()


def test_there_are_spec_schemas() -> None:
    names = {path.name for path in SPEC_SCHEMAS}
    assert {"trainingjob.schema.json", "clusterprofile.schema.json"} <= names


def test_the_walk_finds_a_property_without_a_description(tmp_path: Path) -> None:
    schema = {"properties": {"a": {"description": "x"}, "b": {"$ref": "#/$defs/B"}}}
    schema["$defs"] = {"B": {"type": "string"}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    assert undocumented(path) == [".b"]


def test_a_reference_to_kubernetes_definitions_takes_their_description() -> None:
    ref = "../_kubernetes/_definitions.json#/$defs/io.k8s.api.core.v1.PodTemplateSpec"
    assert _described({"$ref": ref}, paths.SCHEMA_DIR / "crds" / "x" / "y.json")


@pytest.mark.parametrize("path", SPEC_SCHEMAS, ids=lambda p: p.name)
def test_every_property_has_a_description(path: Path) -> None:
    missing = undocumented(path)
    assert not missing, f"{path.name}: properties without a description: {missing}"


def test_every_schema_is_counted() -> None:
    spec = {_name(p) for p in SPEC_SCHEMAS}
    assert {_name(p) for p in ALL_SCHEMAS} - spec == set(UNDESCRIBED)


@pytest.mark.parametrize("path", [p for p in ALL_SCHEMAS if p not in SPEC_SCHEMAS], ids=_name)
def test_no_schema_loses_ground(path: Path) -> None:
    missing = undocumented(path)
    known = UNDESCRIBED[_name(path)]
    assert len(missing) <= known, (
        f"{_name(path)}: {len(missing) - known} more properties without a description than"
        f" the {known} known; describe them: {missing}"
    )
    assert len(missing) == known, (
        f"{_name(path)}: {known - len(missing)} more described: lower UNDESCRIBED to {len(missing)}"
    )
