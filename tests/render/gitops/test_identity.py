"""What makes each GitOps object the object its controller reads, checked in-process.

Found by mutation testing (`make mutation`): a wrong `kind`, a misspelt `metadata` key, an
un-templated Application name or a misspelt CEL condition type passed every other test,
because the CRD schemas let unknown metadata through and the behaviour tests that catch them
ran the CLI in a subprocess then. Each test says which upstream rule makes the value right.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.gitops.fixtures import SETTINGS, mixed_repo
from tests.render.gitops.test_argocd import _render_template_patch
from tests.render.gitops.test_health_cel import CURRENT, FAILED, IN_PROGRESS, flux_status, job
from tests.tools import require_upstream
from trainops.render.gitops import render_gitops
from trainops.render.gitops.argocd import application_set
from trainops.render.gitops.flux import health_check_exprs
from trainops.render.gitops.health import TRAINJOB_HEALTH_SCRIPT, lua_source

CRDS = {
    # (apiVersion, kind) -> upstream CRD file that defines exactly that group, version and kind.
    ("argoproj.io/v1alpha1", "AppProject"): "argoproj.io/appprojects.yaml",
    ("argoproj.io/v1alpha1", "ApplicationSet"): "argoproj.io/applicationsets.yaml",
    (
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
    ): "source.toolkit.fluxcd.io/gitrepositories.yaml",
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"): (
        "kustomize.toolkit.fluxcd.io/kustomizations.yaml"
    ),
}


def objects() -> dict[str, dict[str, Any]]:
    """The Argo CD and Flux objects, one per file (the delivery accounts' RBAC lists,
    `rbac.yaml` and `rbac/`, are test_delivery_guarantees.py's)."""
    files = {p: o for p, o in render_gitops(mixed_repo()).items() if "rbac" not in p}
    for path, obj in files.items():
        assert isinstance(obj, dict), f"{path}: {obj!r} is not a Kubernetes object"
    return files


@functools.cache
def _crd(path: Path) -> Any:
    """An upstream CRD, read once (the ApplicationSet CRD is megabytes of schema)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_every_custom_resource_names_a_kind_its_crd_serves() -> None:
    """The API server matches apiVersion and kind exactly (case-sensitive) against a CRD's
    `spec.group`, a served `spec.versions[].name` and `spec.names.kind`; anything else is
    "no matches for kind" and the file is never applied."""
    upstream = require_upstream() / "crds"
    seen = set()
    for path, obj in objects().items():
        key = (obj["apiVersion"], obj["kind"])
        if key == ("v1", "ConfigMap"):
            continue  # the argocd-cm patch: test below
        assert key in CRDS, f"{path}: {key} is not a kind the Argo CD / Flux CRDs define"
        crd = _crd(upstream / CRDS[key])
        group, _, version = obj["apiVersion"].rpartition("/")
        assert crd["spec"]["group"] == group
        assert crd["spec"]["names"]["kind"] == obj["kind"]
        assert version in {v["name"] for v in crd["spec"]["versions"] if v.get("served")}
        assert crd["spec"]["scope"] == "Namespaced"
        seen.add(key)
    assert seen == set(CRDS)


def test_every_object_is_named_labelled_and_in_its_controllers_namespace() -> None:
    """Argo CD reads AppProjects and ApplicationSets only in its own namespace (without the
    apps-in-any-namespace feature); Flux's Kustomization refers to the GitRepository by name
    in its own namespace. docs/gitops.md names each object; `part-of` lets
    `kubectl get -l app.kubernetes.io/part-of=trainops` find them."""
    files = objects()
    expected = {
        "gitops/argocd/appproject.yaml": (SETTINGS.argocd_project, SETTINGS.argocd_namespace),
        "gitops/argocd/applicationset.yaml": ("trainops", SETTINGS.argocd_namespace),
        "gitops/argocd/argocd-cm-health.yaml": ("argocd-cm", SETTINGS.argocd_namespace),
        "gitops/flux/eks-l4/source.yaml": ("trainops", SETTINGS.flux_namespace),
        "gitops/flux/eks-l4/training.yaml": ("training-eks-l4", SETTINGS.flux_namespace),
    }
    assert sorted(files) == sorted(expected)
    for path, (name, namespace) in expected.items():
        metadata = files[path]["metadata"]
        assert metadata["name"] == name, path
        assert metadata["namespace"] == namespace, path
    for path, obj in files.items():
        if obj["kind"] != "ConfigMap":
            assert obj["metadata"]["labels"] == {"app.kubernetes.io/part-of": "trainops"}, path
    source = files["gitops/flux/eks-l4/source.yaml"]
    ref = files["gitops/flux/eks-l4/training.yaml"]["spec"]["sourceRef"]
    assert ref == {"kind": source["kind"], "name": source["metadata"]["name"]}


def test_health_patch_is_the_argocd_cm_configmap() -> None:
    """Argo CD reads resource customizations only from the core/v1 ConfigMap named
    `argocd-cm` in its namespace (https://argo-cd.readthedocs.io/en/stable/operator-manual/
    argocd-cm-yaml/); the labels are those of Argo CD's own install manifest, so the patch
    merges onto it."""
    cm = objects()["gitops/argocd/argocd-cm-health.yaml"]
    assert (cm["apiVersion"], cm["kind"]) == ("v1", "ConfigMap")
    assert cm["metadata"] == {
        "name": "argocd-cm",
        "namespace": SETTINGS.argocd_namespace,
        "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
    }
    assert set(cm["data"].values()) == {lua_source(), lua_source(TRAINJOB_HEALTH_SCRIPT)}


def _go_template(text: str, element: dict[str, Any]) -> str:
    """`{{ .key }}` with `missingkey=error`: an unknown key is an error, as in Argo CD."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        assert key in element, f"{text}: no key {key!r} in the generator element"
        return str(element[key])

    return re.sub(r"\{\{ \.(\w+) \}\}", value, text)


def test_applicationset_templates_one_application_per_cluster() -> None:
    """docs/gitops.md: Go templates (`goTemplate: true`, needed by `templatePatch` and by the
    `{{ .cluster }}` syntax) with `missingkey=error` (a typo fails the generation instead of
    rendering "<no value>"); the Application is `training-<cluster>`, labelled with its
    cluster, compared with server-side diff."""
    spec = application_set(mixed_repo())["spec"]
    assert spec["goTemplate"] is True
    assert spec["goTemplateOptions"] == ["missingkey=error"]
    metadata = spec["template"]["metadata"]
    for element in spec["generators"][0]["list"]["elements"]:
        cluster = element["cluster"]
        assert _go_template(metadata["name"], element) == f"training-{cluster}"
        labels = {k: _go_template(v, element) for k, v in metadata["labels"].items()}
        assert labels == {"app.kubernetes.io/part-of": "trainops", "trainops.dev/cluster": cluster}
        path = _go_template(spec["template"]["spec"]["source"]["path"], element)
        assert path == f"overlays/{cluster}"
        # https://argo-cd.readthedocs.io/en/stable/user-guide/diff-strategies/
        assert metadata["annotations"] == {
            "argocd.argoproj.io/compare-options": "ServerSideDiff=true"
        }
        assert _render_template_patch(spec["templatePatch"], element)["spec"]["destination"]


# docs/gitops.md (Flux, healthCheckExprs): Running, Succeeded or Suspended (queued by Kueue)
# is current; Failed is failed; Created alone is still in progress.
@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([("Created", "True"), ("Suspended", "True")], CURRENT),
        ([("Created", "True"), ("Running", "True")], CURRENT),
        ([("Created", "True"), ("Succeeded", "True")], CURRENT),
        ([("Created", "True"), ("Failed", "True")], FAILED),
        ([("Created", "True")], IN_PROGRESS),
    ],
)
def test_health_expressions_built_here_read_each_state(
    conditions: list[tuple[str, str]], expected: str
) -> None:
    """The same CEL evaluation as test_health_cel.py, on `health_check_exprs()` itself."""
    for entry in health_check_exprs():
        if entry["kind"] == "TrainJob":
            continue  # no Running condition: its own states are in test_health_trainjob.py
        assert flux_status(entry, job(entry["kind"], conditions)) == expected, entry["kind"]
