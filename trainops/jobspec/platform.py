"""Platform manifests: the hand-written objects a cluster needs beside its jobs (Volcano
Queue, Kueue ResourceFlavor/ClusterQueue/LocalQueue, Multus NetworkAttachmentDefinition,
PriorityClass), in `clusters/<name>/manifests/*.yaml` next to the profile `clusters/<name>.yaml`.

The profile loader reads only the files directly in `clusters/`; a directory there is a
cluster's platform directory, so it must be named like a profile and hold `manifests/` and
nothing else. Each object is checked here for what the schema cannot say (a kind we know the
scope of, a namespace the cluster allows, no duplicates); `trainops validate` checks it
against its schema like every other built object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.core.limits import inside
from trainops.core.yamlio import Document, load_file
from trainops.facts.platform import PLATFORM_KINDS, REQUIRED_LABELS
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

MANIFESTS_DIR = "manifests"


def _display(path: Path, root: Path) -> str:
    return str(path.relative_to(root))


def _object(doc: Document, cluster: model.ClusterProfile, out: Collector) -> bool:
    data = doc.data
    if not isinstance(data, dict):
        out.add([], "expected a Kubernetes object (a mapping with apiVersion, kind, metadata)")
        return False
    for key in ("apiVersion", "kind"):
        if not isinstance(data.get(key), str):
            out.add([key] if key in data else [], f"`{key}` must be a string")
            return False
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        out.add(["metadata"] if "metadata" in data else [], "`metadata.name` is required")
        return False
    group = data["apiVersion"].rpartition("/")[0]
    namespaced = PLATFORM_KINDS.get((group, data["kind"]))
    if namespaced is None:
        known = ", ".join(f"{k} ({g or 'core'})" for g, k in sorted(PLATFORM_KINDS))
        out.add(
            ["kind"],
            f"{data['kind']} ({group or 'core'}) is not a platform kind trainops delivers"
            f" (known: {known}); jobs and their objects go in jobs/"
            + (
                "; a Secret never goes in Git: deliver an ExternalSecret that names it in"
                " your secret store"
                if (group, data["kind"]) == ("", "Secret")
                else ""
            ),
        )
        return False
    namespace = meta.get("namespace")
    if namespaced and namespace not in cluster.namespaces:
        out.add(
            ["metadata", "namespace"] if namespace else ["metadata"],
            f"{data['kind']} is namespaced: `metadata.namespace` must be one of cluster"
            f" `{cluster.name}`'s namespaces ({', '.join(cluster.namespaces)}),"
            f" got {namespace!r}",
        )
        return False
    if not namespaced and namespace is not None:
        out.add(
            ["metadata", "namespace"], f"{data['kind']} is cluster-scoped: remove the namespace"
        )
        return False
    labels = meta.get("labels")
    for key, value in REQUIRED_LABELS.get((group, data["kind"]), {}).items():
        if not isinstance(labels, dict) or labels.get(key) != value:
            out.add(
                ["metadata", "labels"] if isinstance(labels, dict) else ["metadata"],
                f'a platform {data["kind"]} is a Grafana dashboard: label it `{key}: "{value}"`'
                " (kube-prometheus-stack's dashboard sidecar loads those); other settings belong"
                " to a job or the cluster profile",
            )
            return False
    return True


def _key(data: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = data["metadata"]
    return (data["apiVersion"].rpartition("/")[0], data["kind"], meta.get("namespace", ""),
            meta["name"])  # fmt: skip


def load_platform(
    root: Path, clusters: dict[str, model.ClusterProfile], invalid: set[str]
) -> tuple[dict[str, tuple[model.PlatformObject, ...]], list[Problem]]:
    """Every cluster's platform objects, by cluster name; and the problems found."""
    problems: list[Problem] = []
    found: dict[str, tuple[model.PlatformObject, ...]] = {}
    base = root / paths.CLUSTERS_DIR
    if not base.is_dir():
        return found, problems
    for directory in sorted(p for p in base.iterdir() if p.is_dir()):
        if not _layout(root, directory, clusters, invalid, problems):
            continue
        cluster = clusters.get(directory.name)
        manifests = directory / MANIFESTS_DIR
        if cluster is None or not manifests.is_dir():
            continue
        objects: list[model.PlatformObject] = []
        seen: dict[tuple[str, str, str, str], str] = {}
        for path in sorted(manifests.iterdir()):
            for doc in _documents(root, manifests, path, problems):
                out = Collector(doc)
                if _object(doc, cluster, out):
                    _unique(doc, seen, out)
                    objects.append(model.PlatformObject(doc.file, doc.data))
                problems += out.problems
        found[cluster.name] = tuple(objects)
    return found, problems


def _layout(
    root: Path,
    directory: Path,
    clusters: dict[str, model.ClusterProfile],
    invalid: set[str],
    problems: list[Problem],
) -> bool:
    """A cluster's directory is named like a profile and holds `manifests/` only; False when
    there is no such profile (nothing in it is read)."""
    where = _display(directory, root)
    if directory.name not in clusters and directory.name not in invalid:
        message = (
            f"no cluster profile {paths.CLUSTERS_DIR}/{directory.name}.yaml for this"
            f" directory: a directory in {paths.CLUSTERS_DIR}/ holds the platform"
            f" manifests of the profile of the same name ({where}/{MANIFESTS_DIR}/)"
        )
        problems.append(Problem.whole_file(where, message))
        return False
    for entry in sorted(directory.iterdir()):
        if entry.name != MANIFESTS_DIR or not entry.is_dir():
            message = (
                f"only {MANIFESTS_DIR}/ belongs in {where}/: move it, or the profile's"
                f" settings into {paths.CLUSTERS_DIR}/{directory.name}.yaml"
            )
            problems.append(Problem.whole_file(_display(entry, root), message))
    return True


def _documents(root: Path, manifests: Path, path: Path, problems: list[Problem]) -> list[Document]:
    """The non-empty YAML documents of one file in `manifests/`; none, with the problem, for a
    file that is not a YAML file inside the repository or does not load."""
    display = _display(path, root)
    if not inside(path, root):
        # A symlink (of the file, or of manifests/ or the cluster's directory) out of
        # the repository would be read and copied into the overlay (issue 29.7).
        message = "a symlink to a file outside the repository: put the file itself here"
        problems.append(Problem.whole_file(display, message))
        return []
    if path.suffix not in {".yaml", ".yml"} or not path.is_file():
        message = (
            f"platform manifests are YAML files (*.yaml) directly in {_display(manifests, root)}/"
        )
        problems.append(Problem.whole_file(display, message))
        return []
    try:
        docs = load_file(path, display, as_kubernetes=True)
    except InputError as err:
        problems += err.problems
        return []
    return [doc for doc in docs if doc.data is not None]


def _unique(doc: Document, seen: dict[tuple[str, str, str, str], str], out: Collector) -> None:
    """One object per API group, kind, namespace and name across a cluster's files."""
    key = _key(doc.data)
    line = doc.position(["metadata", "name"])[0]
    if key in seen:
        out.add(["metadata", "name"], f"{key[1]} `{key[3]}` is also in {seen[key]}")
    seen[key] = f"{doc.file}:{line}"
