"""The Argo CD and Flux kinds we render (gitops/) have strict project schemas.

- the shipped repository validates clean with no `--crds` (our schemas alone);
- each kind, taken from the repo's own gitops/ output, is clean; a misspelled or wrong-typed
  field in it is an error naming the file and the line of that field;
- the rendered objects are accepted by the converted upstream CRDs too (ours are not looser
  there, and not stricter than the API without a reason).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_tool
from trainops.cli import main
from trainops.validate.load import load_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

APPLICATIONSET = REPO / "gitops" / "argocd" / "applicationset.yaml"
APPPROJECT = REPO / "gitops" / "argocd" / "appproject.yaml"
FLUX = sorted((REPO / "gitops" / "flux").glob("*/*.yaml"))


def _object(kind: str) -> dict[str, Any]:
    """One object of `kind` as rendered in gitops/ (an Application: the ApplicationSet's
    template, filled in as the ApplicationSet controller would)."""
    if kind == "Application":
        template = _object("ApplicationSet")["spec"]["template"]
        spec = copy.deepcopy(template["spec"])
        spec["source"]["path"] = "overlays/onprem-a100"
        spec["destination"] = {"server": "https://onprem-a100.k8s.internal:6443"}
        spec["syncPolicy"]["automated"] = {"prune": True, "selfHeal": False}
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": "training-onprem-a100", "namespace": "argocd"},
            "spec": spec,
        }
    for path in [APPLICATIONSET, APPPROJECT, *FLUX]:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == kind:
                return dict(doc)
    pytest.fail(f"no {kind} in gitops/: was it renamed? run `trainops render`")


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


# (kind, where to put a wrong value, the value, the finding's message starts with)
MISTAKES: list[tuple[str, tuple[str | int, ...], Any, str]] = [
    ("Application", ("spec", "syncPolicy", "automated", "selfheal"), True, "spec.syncPolicy"),
    ("Application", ("spec", "source", "targetRevsion"), "main", "spec.source.targetRevsion"),
    (
        "ApplicationSet",
        ("spec", "generators", 0, "list", "element"),
        [],
        "spec.generators[0].list.element",
    ),
    ("ApplicationSet", ("spec", "template", "metadata", "finalizer"), [], "spec.template"),
    ("ApplicationSet", ("spec", "syncPolicy", "applicationsSync"), "update", "spec.syncPolicy"),
    ("AppProject", ("spec", "destinations", 0, "cluster"), "x", "spec.destinations[0].cluster"),
    ("AppProject", ("spec", "sourceRepos"), "https://github.com/x/y", "spec.sourceRepos"),
    ("Kustomization", ("spec", "sourceRef", "kind"), "HelmRepository", "spec.sourceRef.kind"),
    ("Kustomization", ("spec", "healthCheck"), [], "spec.healthCheck"),
    ("GitRepository", ("spec", "interval"), "5 minutes", "spec.interval"),
    ("GitRepository", ("spec", "ref", "branche"), "main", "spec.ref"),
]
GROUP_VERSION = {
    "Application": ("argoproj.io", "v1alpha1"),
    "ApplicationSet": ("argoproj.io", "v1alpha1"),
    "AppProject": ("argoproj.io", "v1alpha1"),
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1"),
    "GitRepository": ("source.toolkit.fluxcd.io", "v1"),
}


def _validate_file(path: Path, store: SchemaStore) -> list[Any]:
    return validate_manifests(load_manifests([path]), None, store, checkers=[])


@pytest.mark.parametrize("kind", sorted(GROUP_VERSION))
def test_rendered_kind_is_clean(
    kind: str, tmp_path: Path, ours: SchemaStore, converted: SchemaStore
) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(_object(kind)))
    found = ours.lookup((*GROUP_VERSION[kind], kind))
    assert found is not None and found[1].origin == "project"
    for store in (ours, converted):
        findings = _validate_file(path, store)
        assert not findings, [f.message for f in findings]


@pytest.mark.parametrize("kind,path,value,message", MISTAKES, ids=lambda v: str(v)[:30])
def test_wrong_field_is_rejected_with_file_and_line(  # noqa: PLR0917 (parametrized cases)
    kind: str,
    path: tuple[str | int, ...],
    value: Any,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = _object(kind)
    _set(data, path, value)
    file = tmp_path / f"{kind}.yaml"
    text = yaml.safe_dump(data)
    file.write_text(text)
    # The line of the wrong key (block style: the key starts its line, possibly after "- ";
    # a scalar value on the same line tells `kind: HelmRepository` from `kind: Kustomization`).
    key = f"{path[-1]}:"
    shown = "" if isinstance(value, list | dict) else json.dumps(value).strip('"')
    line = next(
        n
        for n, row in enumerate(text.splitlines(), 1)
        if row.strip().removeprefix("- ").startswith(key) and shown in row
    )
    assert main(["validate", "--manifests", str(file), "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["file"], f["line"], f["kind"]) for f in findings] == [(str(file), line, kind)]
    assert findings[0]["message"].startswith(message), findings[0]["message"]


def test_shipped_repo_validates_clean_with_our_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    """`trainops validate` on the repo, no `--crds`: every kind (the gitops/ Argo CD and Flux
    objects included) has a project schema and passes it."""
    require_tool("kubectl")
    assert main(["--root", str(REPO), "validate", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["findings"] == [] and out["summary"]["resources"] > 0
