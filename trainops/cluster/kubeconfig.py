"""Which kubeconfig and which context: the rules kubectl follows, so both reach the same cluster.

- `--kubeconfig FILE`: that file only; it must exist.
- else `KUBECONFIG`: a list of files (joined with `:`; `;` on Windows); files that do not
  exist are skipped; clusters, users and contexts merge by name and the first file that
  defines a name (or `current-context`) wins.
- else `~/.kube/config`.

The context: `--context`, else the cluster profile's `context`, else the kubeconfig's
`current-context`. Relative certificate and key paths resolve against the file that names
them, as kubectl resolves them. Credentials stay in the user's kubeconfig; the
repository only names a context.

https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykube
import yaml

from trainops.cluster.errors import ClusterError

DEFAULT_KUBECONFIG = Path("~/.kube/config")
# Keys of kubeconfig entries that name files; kubectl resolves them against the file's folder.
_PATH_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}
_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


@dataclass(frozen=True)
class Target:
    """A resolved kubeconfig context: what pykube-ng needs, and what messages name."""

    config: pykube.KubeConfig
    context: str
    server: str
    user: str
    source: str
    """The kubeconfig file(s) it came from, as the user would name them."""


def kubeconfig_files(option: Path | None, environ: dict[str, str] | None = None) -> list[Path]:
    """The files to read, in precedence order (kubectl's), existing ones only."""
    env = os.environ if environ is None else environ
    if option is not None:
        path = option.expanduser()
        if not path.is_file():
            raise ClusterError(f"--kubeconfig {option}: no such file")
        return [path]
    listed = env.get("KUBECONFIG", "")
    if listed:
        files = [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
        found = [p for p in files if p.is_file()]
        if not found:
            raise ClusterError(
                f"no kubeconfig: none of the files in KUBECONFIG={listed} exists;"
                " fix KUBECONFIG or pass --kubeconfig FILE"
            )
        return found
    home = Path(env.get("HOME", "~")).expanduser() / ".kube" / "config"
    if not home.is_file():
        raise ClusterError(
            f"no kubeconfig: {home} does not exist and neither --kubeconfig nor KUBECONFIG"
            " is set; point KUBECONFIG at the file your cluster's tooling wrote"
            " (e.g. `kind get kubeconfig --name NAME > kubeconfig`)"
        )
    return [home]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ClusterError(f"kubeconfig {path}: cannot read it: {reason}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ClusterError(f"kubeconfig {path}: expected a mapping at the top level")
    return data


def _absolute(entry: dict[str, Any], keys: tuple[str, ...], folder: Path) -> dict[str, Any]:
    entry = dict(entry)
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            entry[key] = str(folder / value)
    return entry


def merge(files: list[Path]) -> dict[str, Any]:
    """One kubeconfig document from `files`: first definition of each name wins (kubectl)."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {section: set() for section, _ in _SECTIONS}
    for path in files:
        doc = _read(path)
        if "current-context" not in merged and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for section, inner in _SECTIONS:
            for item in doc.get(section) or []:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise ClusterError(
                        f"kubeconfig {path}: every entry of `{section}` needs a name"
                    )
                if item["name"] in seen[section]:
                    continue
                seen[section].add(item["name"])
                body = item.get(inner) or {}
                if inner in _PATH_KEYS:
                    body = _absolute(body, _PATH_KEYS[inner], path.parent)
                merged[section].append({"name": item["name"], inner: body})
    return merged


def resolve(
    kubeconfig: Path | None,
    context: str | None,
    profile_context: str | None = None,
    profile_file: str | None = None,
    environ: dict[str, str] | None = None,
) -> Target:
    """The context to talk to, from the options, the profile and the kubeconfig."""
    files = kubeconfig_files(kubeconfig, environ)
    source = os.pathsep.join(str(f) for f in files)
    doc = merge(files)
    contexts = {c["name"]: c["context"] for c in doc["contexts"]}
    known = ", ".join(sorted(contexts)) or "none"
    if context is not None:
        name, origin = context, "--context"
    elif profile_context is not None:
        name, origin = profile_context, f"`context` in {profile_file or 'the cluster profile'}"
    elif doc.get("current-context"):
        name, origin = str(doc["current-context"]), f"current-context of {source}"
    else:
        raise ClusterError(
            f"no context: {source} has no current-context and none was given;"
            f" pass --context or set `context:` in the cluster profile (known: {known})"
        )
    if name not in contexts:
        raise ClusterError(
            f"unknown context {name!r} ({origin}): {source} defines {known};"
            " fix the name or pass --context"
        )
    clusters = {c["name"]: c["cluster"] for c in doc["clusters"]}
    cluster_name = str(contexts[name].get("cluster", ""))
    if cluster_name not in clusters or not clusters[cluster_name].get("server"):
        raise ClusterError(
            f"context {name!r} in {source} names cluster {cluster_name!r}, which has no"
            " `server` there; fix the kubeconfig"
        )
    server_url = str(clusters[cluster_name]["server"])
    if not server_url.startswith(("https://", "http://")):
        raise ClusterError(
            f"context {name!r} in {source}: server {server_url!r} of cluster {cluster_name!r}"
            " is not an https:// URL; fix the kubeconfig"
        )
    config = pykube.KubeConfig(doc, current_context=name)
    try:
        server = str(config.cluster["server"]).rstrip("/")
        _ = config.user  # reads certificate and key files now, not at the first request
    except pykube.PyKubeError as err:
        raise ClusterError(f"kubeconfig {source}, context {name!r}: {err}") from None
    user = str(contexts[name].get("user", ""))
    return Target(config=config, context=name, server=server, user=user, source=source)
