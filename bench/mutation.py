"""Mutation testing of the renderer, the GitOps objects and the rules (`make mutation`).

mutmut (a real mutation tool, pinned in the `dev` extra) changes one operator, constant or
argument at a time in the code under test and runs the tests that reach the changed function;
a mutant the tests do not notice ("survived") is a behaviour no test pins down.

Each target runs on its own, with the tests that exercise it (a whole-suite run per mutant
would take hours on two cores):

- `render`: trainops/render/ without gitops/, against tests/render (not gitops/) and tests/golden;
- `gitops`: trainops/render/gitops/, against tests/render/gitops;
- `rules`: trainops/rules/, against tests/rules.

mutmut works in a copy (`<scratch>/mutants/`), where the tests find `../shared` through a
symbolic link beside it. Results: bench/results/mutation.json (per target: killed, survived,
timeouts, score, seconds, and the surviving mutants' names; `mutmut show NAME` in the target's
scratch directory prints one). The scores of record are in docs/development.md.

Run: `python -m bench.mutation [render gitops rules]` from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mutmut.stats import status_by_exit_code

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "mutation.json"
SCRATCH = REPO / "build" / "mutation"

TARGETS: dict[str, dict[str, list[str]]] = {
    "render": {
        "source_paths": ["trainops/render/"],
        "do_not_mutate": ["trainops/render/gitops/*"],
        "tests": ["tests/render", "tests/golden", "--ignore=tests/render/gitops"],
    },
    "gitops": {
        "source_paths": ["trainops/render/gitops/"],
        "do_not_mutate": [],
        "tests": ["tests/render/gitops"],
    },
    "rules": {
        "source_paths": ["trainops/rules/", "trainops/kube/"],
        "do_not_mutate": [],
        "tests": ["tests/rules", "tests/kube"],
    },
}

KILLED = {"killed", "timeout", "caught by type check", "segfault"}
"""What counts as killed in the score: the tests failed, hung or crashed on the mutant."""


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def prepare(name: str, rev: str | None) -> Path:
    """A fresh copy of the tree (or of commit `rev`) with this target's mutmut settings."""
    target = TARGETS[name]
    root = SCRATCH / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if rev is not None:
        archive = subprocess.run(
            ["git", "archive", rev], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    files = (
        []
        if rev is not None
        else subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
    )
    for raw in filter(None, files):
        rel = Path(os.fsdecode(raw))
        if rel.parts[0] == "build" or not (REPO / rel).is_file():
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    # The tests read ../shared beside the repository; in the copy that is beside mutants/.
    shared = REPO.parent / "shared"
    if shared.exists():
        (root / "shared").symlink_to(shared.resolve())
    also_copy = sorted(p.name for p in root.iterdir() if p.name not in {"shared", "tests"})
    settings = [
        "",
        "[tool.mutmut]",
        f"source_paths = {toml_list(target['source_paths'])}",
        f"do_not_mutate = {toml_list(target['do_not_mutate'])}",
        f"also_copy = {toml_list(also_copy)}",
        f"pytest_add_cli_args_test_selection = {toml_list(target['tests'])}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist"]',
        "use_git_change_detection = false",
    ]
    with (root / "pyproject.toml").open("a") as out:
        out.write("\n".join(settings) + "\n")
    return root


def statuses(root: Path) -> dict[str, str]:
    """Mutant name -> mutmut's status, from the .meta files mutmut writes beside each mutant."""
    found: dict[str, str] = {}
    for meta in sorted((root / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        for key, code in data.get("exit_code_by_key", {}).items():
            found[key] = status_by_exit_code[code]
    return found


def run_target(
    name: str, children: int, rev: str | None, only: list[str] | None = None
) -> dict[str, Any]:
    root = prepare(name, rev)
    start = time.monotonic()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(children), *(only or [])],
        cwd=root,
        env=env,
        check=False,
    )
    seconds = round(time.monotonic() - start)
    found = statuses(root)
    counts: dict[str, int] = {}
    for status in found.values():
        counts[status] = counts.get(status, 0) + 1
    killed = sum(n for status, n in counts.items() if status in KILLED)
    scored = killed + counts.get("survived", 0)
    return {
        "rev": rev or "working tree",
        "only": only or "all",
        "exit_code": proc.returncode,
        "seconds": seconds,
        "mutants": len(found),
        "counts": dict(sorted(counts.items())),
        "score": round(killed / scored, 4) if scored else None,
        "survived": sorted(k for k, s in found.items() if s == "survived"),
        "no_tests": sorted(k for k, s in found.items() if s == "no tests"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rev", help="mutate this commit instead of the working tree")
    parser.add_argument("--results", type=Path, default=RESULTS, help="JSON file to update")
    parser.add_argument(
        "--only",
        action="append",
        help="mutmut mutant-name glob (e.g. 'trainops.kube.objects*'); repeatable",
    )
    args = parser.parse_args(argv)
    names = args.targets or list(TARGETS)
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    out: Path = args.results
    results: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    for name in names:
        result = run_target(name, args.max_children, args.rev, args.only)
        results[name] = result
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(
            f"{name}: score {result['score']} ({result['counts']}) in {result['seconds']} s",
            flush=True,
        )
    failed = [n for n in names if results[n]["exit_code"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
