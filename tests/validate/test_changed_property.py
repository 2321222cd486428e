"""The safety property of `validate --changed` (issue 28): on a generated fleet (bench/fleet.py:
copies of every shipped job and cluster, platform manifests included), random seeded edits
of the kinds a pull request makes (a field of a job, a job naming another job's Service, a
profile setting, a new job, a deleted job, a platform manifest) leave `--changed` reporting

- every finding a full `validate` reports on an object the edit touched (the touched
  objects are worked out here from the edit itself and the repository layout of DESIGN.md:
  `base/<job>/`, `overlays/<cluster>/<job>/`, the cluster's whole overlay for a profile or
  platform edit, `gitops/` for any edit), and
- nothing a full `validate` does not report (no finding made up by a partial build: a
  lookup that fails because the object it names was not built).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.fleet import generate
from tests.tools import require_kustomize, require_tool
from tests.validate.changed_repo import git, render_and_commit, validate_json

SEEDS = range(8)
JOBS = 8
HOLDER = "holder"
COPIES = 2  # two copies of each shipped cluster: an edit of one must not leak into the other

Touched = set[tuple[str, str | None]]
"""(cluster, job): that job's objects there; (cluster, None): the cluster's whole overlay."""


def _jobs(root: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted((root / "jobs").glob("*.yaml"))}


def _clusters(spec: dict[str, Any]) -> list[str]:
    return [t["cluster"] for t in spec["targets"]]


def _write(root: Path, spec: dict[str, Any]) -> None:
    (root / "jobs" / f"{spec['name']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def _not_holder(root: Path) -> list[dict[str, Any]]:
    """The jobs but the holder (its ReadWriteOnce claim allows it one pod only)."""
    return [spec for name, spec in _jobs(root).items() if name != HOLDER]


def edit_job_field(root: Path, rng: random.Random) -> Touched:
    """A field of one job: its size, a literal token in its env, a `$(VAR)` nothing defines
    in its args (the last two trip rules)."""
    spec = rng.choice(_not_holder(root))
    change = rng.choice(["replicas", "token", "undefined"])
    env = dict(spec.get("env") or {})
    if change == "replicas":
        spec["replicas"] = rng.choice([2, 3, 5])
    elif change == "token":
        env["HF_TOKEN"] = "hf_abc123"
    else:
        spec["args"] = [*spec.get("args", []), "--seed=$(NOT_DEFINED_ANYWHERE)"]
    if env:
        spec["env"] = env
    _write(root, spec)
    return {(c, spec["name"]) for c in _clusters(spec)}


def name_another_job(root: Path, rng: random.Random) -> Touched:
    """A job mounts a claim another job creates (`holder-scratch`, ReadWriteOnce: the
    claim-single-node rule finds it only if the holder's objects are in the manifest set),
    or one nobody creates."""
    jobs = _jobs(root)
    holder = jobs[HOLDER]
    spec = rng.choice(
        [j for n, j in jobs.items() if n != HOLDER and j["namespace"] == holder["namespace"]]
    )
    claim = rng.choice([f"{HOLDER}-scratch", f"{HOLDER}-scratch", "nobody-creates-this"])
    spec["volumes"] = {**spec["volumes"], "shared": {"mountPath": "/shared", "claimName": claim}}
    _write(root, spec)
    return {(c, spec["name"]) for c in _clusters(spec)}


def new_job(root: Path, rng: random.Random) -> Touched:
    spec = rng.choice(_not_holder(root))
    spec["name"] = f"new-{rng.randint(100, 999)}"
    spec["replicas"] = rng.choice([1, 2, 4])
    _write(root, spec)
    return {(c, spec["name"]) for c in _clusters(spec)}


def delete_job(root: Path, rng: random.Random) -> Touched:
    name = rng.choice(sorted(_jobs(root)))
    (root / "jobs" / f"{name}.yaml").unlink()
    return set()  # nothing of it is left to report on


def edit_profile(root: Path, rng: random.Random) -> Touched:
    path = rng.choice(sorted((root / "clusters").glob("*.yaml")))
    data = yaml.safe_load(path.read_text())
    # Another version than it has: an edit that changes nothing is no change to find.
    data["kubernetesVersion"] = rng.choice(
        [v for v in ("1.30", "1.31", "1.32") if v != data["kubernetesVersion"]]
    )
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return {(data["name"], None)}


def edit_platform(root: Path, rng: random.Random) -> Touched:
    """A platform manifest: a field its schema does not have (a finding on it), or a new
    PriorityClass."""
    path = rng.choice(sorted((root / "clusters").glob("*/manifests/*.yaml")))
    docs = list(yaml.safe_load_all(path.read_text()))
    if rng.random() < 0.5:
        rng.choice(docs).setdefault("spec", {})["notAField"] = True
    else:
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"extra-{rng.randint(0, 99)}"},
                "value": 10,
            }
        )
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return {(path.parent.parent.name, None)}


EDITS: list[Callable[[Path, random.Random], Touched]] = [
    edit_job_field,
    name_another_job,
    new_job,
    delete_job,
    edit_profile,
    edit_platform,
]


def on_touched(atom: dict[str, Any], touched: Touched) -> bool:
    """Whether the rendered place of `atom` (see `atoms`) is an object the edit touched."""
    file, cluster = atom["rendered"] or "", atom["cluster"]
    if file.startswith("gitops/"):
        return bool(touched)
    if (cluster, None) in touched:
        return True
    parts = file.split("/")
    job = parts[1] if parts[0] == "base" else parts[2] if len(parts) > 3 else None
    return (cluster, job) in touched


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tool("git")
    require_kustomize()
    root = tmp_path_factory.mktemp("fleet") / "repo"
    generate(root, JOBS, COPIES)
    # A job with a claim one node can mount: what name_another_job's jobs look up.
    holder = yaml.safe_load((root / "jobs" / "resnet50-ddp-000.yaml").read_text())
    holder.update(name=HOLDER, replicas=1)
    holder["env"] = {**holder["env"], "HF_TOKEN": "hf_abc123"}  # a finding nobody edits
    holder["volumes"]["scratch"] = {"mountPath": "/scratch", "size": "1Gi"}
    holder["volumes"]["scratch"]["accessMode"] = "ReadWriteOnce"
    _write(root, holder)
    # The platform shares them: the pod fence lets a job mount only claims it creates and those
    # its profile lists (`jobAccess.sharedClaims`, naming the job that creates one).
    for path in sorted((root / "clusters").glob("*.yaml")):
        profile = yaml.safe_load(path.read_text())
        shared = profile.setdefault("jobAccess", {}).setdefault("sharedClaims", [])
        shared += [{"name": f"{HOLDER}-scratch", "writable": True, "createdBy": HOLDER}]
        shared += [{"name": "nobody-creates-this", "writable": True}]
        path.write_text(yaml.safe_dump(profile))
    git(root.parent, "init", "-q", "-b", "main", str(root))
    render_and_commit(root, "the fleet")
    return root


def atoms(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding at each rendered place it was found. A finding on a rendered object is
    told once at its spec line, merged over the clusters and replicas it was found on
    (`relatedLocations`): a partial run finds it on fewer of them, so the places compare, each
    with its rule and spec line; a finding with no rendered place compares whole."""
    out = []
    for f in findings:
        if not f.get("relatedLocations"):
            out.append({**f, "rendered": f["file"]})
            continue
        head = {k: f[k] for k in ("rule", "severity", "file", "line")}
        for r in f["relatedLocations"]:
            out.append(
                {**head, **{k: v for k, v in r.items() if k != "file"}, "rendered": r["file"]}
            )
    return out


def key(atom: dict[str, Any]) -> str:
    return yaml.safe_dump(atom, sort_keys=True)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_changed_reports_what_a_full_validate_reports_on_the_touched_objects(
    fleet: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    git(fleet, "checkout", "-q", "--", ".")
    git(fleet, "clean", "-qfd")
    rng = random.Random(seed)
    touched: Touched = set()
    for edit in rng.sample(EDITS, k=2):
        touched |= edit(fleet, rng)
    full_code, full, _ = validate_json(fleet, capsys)
    code, changed, err = validate_json(fleet, capsys, "--changed", "--base", "main")
    assert full_code != 2, f"seed {seed}: the edit made bad input: {full['findings']}"
    full_atoms, changed_atoms = atoms(full["findings"]), atoms(changed["findings"])
    assert code == full_code or not any(on_touched(a, touched) for a in full_atoms), err

    reported = {key(a) for a in full_atoms}
    made_up = [a for a in changed_atoms if key(a) not in reported]
    assert not made_up, f"seed {seed}: --changed reports what a full validate does not\n{err}"
    missed = [
        a
        for a in full_atoms
        if on_touched(a, touched) and key(a) not in {key(b) for b in changed_atoms}
    ]
    print(f"seed {seed}: {len(full['findings'])} findings, {len(changed['findings'])} reported")
    assert not missed, f"seed {seed}: --changed misses findings on what the edit touched\n{err}"
