"""The schema layout written for kubeconform is complete: every object finds its file, every ref
resolves.

kubeconform itself cannot be installed on the development machine (the GitHub workflow installs
it and runs `trainops validate --kubeconform`), so this test does what kubeconform would do
before validating: turn each object into a path with the two `-schema-location` templates that
`kubeconform_command` passes, then follow every `$ref` from that file, across files, to its
JSON-pointer target. A missing file or a dangling ref here is an unresolvable schema there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO
from trainops.validate import kubeconform
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION


def _template_paths(obj: dict[str, Any], schema_dir: Path) -> list[Path]:
    """The candidate files for `obj`, from the `-schema-location` templates we pass."""
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    kind = str(obj["kind"]).lower()
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    values = {
        "{{.ResourceKind}}": kind,
        "{{.KindSuffix}}": suffix,
        "{{.Group}}": group,
        "{{.ResourceAPIVersion}}": version,
    }
    command = kubeconform.kubeconform_command(schema_dir, DEFAULT_KUBERNETES_VERSION)
    templates = [command[i + 1] for i, arg in enumerate(command) if arg == "-schema-location"]
    paths = []
    for template in templates:
        path = template
        for key, value in values.items():
            path = path.replace(key, value)
        paths.append(Path(path))
    return paths


def _pointer(document: Any, fragment: str) -> Any:
    node = document
    for raw in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _dangling_refs(start: Path) -> list[str]:
    """Follow every `$ref` reachable from `start`; returns the ones that do not resolve."""
    loaded: dict[Path, Any] = {}
    seen: set[tuple[Path, str]] = set()
    todo = [(start.resolve(), "")]
    dangling = []
    while todo:
        path, fragment = todo.pop()
        if (path, fragment) in seen:
            continue
        seen.add((path, fragment))
        if path not in loaded:
            if not path.is_file():
                dangling.append(f"{path} (no such file)")
                continue
            loaded[path] = json.loads(path.read_text(encoding="utf-8"))
        try:
            node = _pointer(loaded[path], fragment)
        except (KeyError, IndexError, ValueError):
            dangling.append(f"{path}#{fragment}")
            continue
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                ref = item.get("$ref")
                if isinstance(ref, str):
                    target, _, frag = ref.partition("#")
                    assert "://" not in target, f"{path}: {ref} would be downloaded"
                    todo.append(((path.parent / target).resolve() if target else path, frag))
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return dangling


def _objects() -> list[dict[str, Any]]:
    """Every object we render (bases and gitops/), and one core kind of each sort we emit."""
    objects = []
    for path in sorted([*REPO.glob("base/**/*.yaml"), *REPO.glob("gitops/**/*.yaml")]):
        if path.name in {"kustomization.yaml", "kustomizeconfig.yaml"}:
            continue
        objects += [d for d in yaml.safe_load_all(path.read_text()) if d and "kind" in d]
    return objects


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kubeconform-schemas")
    kubeconform.write_schema_layout(out, DEFAULT_KUBERNETES_VERSION)
    return out


def test_every_rendered_object_finds_a_schema_whose_refs_resolve(layout: Path) -> None:
    objects = _objects()
    kinds = {(o["apiVersion"], o["kind"]) for o in objects}
    assert {("kubeflow.org/v1", "PyTorchJob"), ("v1", "Service")} <= kinds
    for api_version, kind in sorted(kinds):
        candidates = _template_paths({"apiVersion": api_version, "kind": kind}, layout)
        found = [p for p in candidates if p.is_file()]
        assert found, f"{api_version} {kind}: none of {candidates}"
        assert _dangling_refs(found[0]) == [], f"{api_version} {kind}"


def test_the_check_sees_a_dangling_ref(layout: Path) -> None:
    """The same walk over `schemas/crds` as committed (no core definitions beside it) fails,
    which is why the workflow must not point kubeconform at `schemas/crds` directly."""
    committed = REPO / "trainops" / "schemas" / "crds" / "kubeflow.org" / "pytorchjob_v1.json"
    assert any("_definitions.json" in ref for ref in _dangling_refs(committed))
    assert _dangling_refs(layout / "kubeflow.org" / "pytorchjob_v1.json") == []
