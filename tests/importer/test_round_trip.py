"""Round trip: for the seeds' PyTorchJobs and every upstream PyTorchJob example, `trainops
import`, then `trainops render`, then the real `kustomize build` gives objects equal to the
originals modulo the documented normalisations (tests/importer/roundtrip.py, README). The
fraction is printed; each exception is listed with its reason (EXCEPTIONS).

Beside them, `fixtures/realworld.yaml`: our own minimal PyTorchJob with what real-world
manifests in public repositories do and the examples do not (a shell command line, the
downward API, envFrom, restartPolicy Never, a ConfigMap volume, another node selector).

TFJob and MPIJob round trips join when the spec renders them (their import is one module in
trainops/importer/kinds.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.importer.roundtrip import explained
from tests.render.repos import build_overlay
from tests.rules.helpers import seed_text, yaml_blocks
from tests.tools import REPO, copy_inputs, require_kustomize, require_upstream, trainops

# Seconds: an import, a render and a kustomize build per case (`make test` runs it).
pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures"
SEED000 = REPO / "tests" / "rules" / "seeds" / "seed000.yaml"

# (source, object name) -> why it does not come back equal. Each is also a note `import`
# prints, so the user learns it at import time.
EXCEPTIONS = {
    ("seed001", "llm-finetune"): "elasticPolicy.metrics (an HPA on CPU) is not rendered",
    (
        "examples__pytorch__elastic__imagenet__imagenet.yaml",
        "elastic-example-imagenet",
    ): "elasticPolicy.metrics (an HPA on CPU) is not rendered",
    ("examples__pytorch__cpu-demo__demo.yaml", "torchrun-cpu"): "nprocPerNode 2 on a CPU job:"
    " trainops runs one process per GPU (one on a CPU pod)",
    ("realworld", "bash-launched"): "restartPolicy Never: trainops renders OnFailure",
}


def _cases() -> list[tuple[str, str, str]]:
    """(source label, manifest text, cluster)."""
    cases = [("seed000", SEED000.read_text(), "roundtrip")]
    cases += [("realworld", (FIXTURES / "realworld.yaml").read_text(), "roundtrip")]
    blocks = [b for b in yaml_blocks(seed_text("001")) if "kind: PyTorchJob" in b]
    cases += [("seed001", "\n".join(blocks) + "\n", "onprem-a100")]
    examples = sorted((require_upstream() / "examples").rglob("*.yaml"))
    for path in examples:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if any(d.get("kind") == "PyTorchJob" for d in docs):
            cases.append((path.name, path.read_text(), "roundtrip"))
    return cases


# The examples' system namespaces, renamed to ones a cluster profile may deliver into (a
# profile refuses `default`, `kubeflow`, `kube-*`: docs/security.md). A documented
# normalisation: the objects are otherwise compared as written.
RENAMED_NAMESPACES = {"default": "ml-default", "kubeflow": "ml-kubeflow"}


def _in_allowed_namespaces(text: str) -> str:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        meta = doc.setdefault("metadata", {})
        namespace = meta.get("namespace", "default")
        meta["namespace"] = RENAMED_NAMESPACES.get(namespace, namespace)
    return yaml.safe_dump_all(docs, sort_keys=False)


def _round_trip(tmp: Path, label: str, text: str, cluster: str) -> list[tuple[str, Any]]:
    text = _in_allowed_namespaces(text)
    root = copy_inputs(REPO, tmp / "repo")
    shutil.copy(FIXTURES / "roundtrip.yaml", root / "clusters" / "roundtrip.yaml")
    for job in (root / "jobs").iterdir():
        job.unlink()
    source = tmp / label
    source.write_text(text)
    result = trainops(root, "import", str(source), "--cluster", cluster)
    assert result.returncode in {0, 1}, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    rendered = trainops(root, "render")
    assert rendered.returncode == 0, rendered.stderr
    built = {(o["kind"], o["metadata"]["name"]): o for o in build_overlay(root, cluster)}
    out = []
    for original in yaml.safe_load_all(text):
        if not original or original.get("kind") not in {"PyTorchJob", "PersistentVolumeClaim"}:
            continue
        key = (original["kind"], original["metadata"]["name"])
        out.append((key, (original, built.get(key))))
    return out


def test_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_kustomize()
    results: dict[tuple[str, str], list[str]] = {}
    explained_by: dict[str, set[str]] = {}
    for i, (label, text, cluster) in enumerate(_cases()):
        for (kind, name), (original, built) in _round_trip(tmp_path / str(i), label, text, cluster):
            assert built is not None, f"{label}: {kind} {name} was not rendered"
            used, unexplained = explained(original, built)
            for category, reasons in used.items():
                explained_by.setdefault(category, set()).update(reasons)
            if kind == "PyTorchJob":
                results[(label, name)] = unexplained
            else:
                assert not unexplained, (label, kind, name, unexplained)
    equal = [k for k, v in results.items() if not v]
    with capsys.disabled():
        print(
            f"\nround trip: {len(equal)}/{len(results)} PyTorchJobs equal modulo the normalisations"
        )
        for category, reasons in sorted(explained_by.items()):
            print(f"  normalised ({category}): {'; '.join(sorted(reasons))}")
        for key, diff in sorted(results.items()):
            if diff:
                print(f"  exception {key[0]} {key[1]}: {EXCEPTIONS.get(key, '?')}: {diff}")
    failing = {k for k, v in results.items() if v}
    assert failing == set(EXCEPTIONS), {k: results.get(k) for k in failing ^ set(EXCEPTIONS)}
    assert len(results) >= 10, "the seeds' and upstream PyTorchJobs were all compared"
