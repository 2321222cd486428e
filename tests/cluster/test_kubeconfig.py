"""Which kubeconfig and context the cluster-facing commands use: kubectl's rules.

Pure file handling (no server): KUBECONFIG lists merge with the first definition
winning, missing files in the list are skipped, relative certificate paths resolve
against the file that names them, and the context comes from --context, else the
cluster profile, else current-context.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from trainops.cluster.errors import ClusterError
from trainops.cluster.kubeconfig import resolve


def _write(path: Path, doc: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _config(
    cluster: str, server: str, context: str, current: str | None = None
) -> dict[str, object]:
    doc: dict[str, object] = {
        "clusters": [{"name": cluster, "cluster": {"server": server}}],
        "users": [{"name": f"{cluster}-admin", "user": {"token": "t"}}],
        "contexts": [
            {"name": context, "context": {"cluster": cluster, "user": f"{cluster}-admin"}}
        ],
    }
    if current:
        doc["current-context"] = current
    return doc


def test_kubeconfig_list_merges_first_definition_wins(tmp_path: Path) -> None:
    first = _write(
        tmp_path / "a", _config("kind", "https://127.0.0.1:6443", "kind-trainops", "kind-trainops")
    )
    second_doc = _config("gke", "https://10.0.0.1", "gke-prod", "gke-prod")
    second_doc["contexts"].append(  # type: ignore[attr-defined]
        {"name": "kind-trainops", "context": {"cluster": "gke", "user": "gke-admin"}}
    )
    second = _write(tmp_path / "b", second_doc)
    listed = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])
    env = {"KUBECONFIG": listed, "HOME": str(tmp_path)}

    current = resolve(None, None, environ=env)
    assert (current.context, current.server) == ("kind-trainops", "https://127.0.0.1:6443")
    assert current.source == os.pathsep.join([str(first), str(second)])
    other = resolve(None, "gke-prod", environ=env)
    assert (other.context, other.server, other.user) == (
        "gke-prod",
        "https://10.0.0.1",
        "gke-admin",
    )


def test_context_precedence_option_profile_current(tmp_path: Path) -> None:
    doc = _config("a", "https://a.example:6443", "ctx-a", "ctx-a")
    doc["clusters"].append({"name": "b", "cluster": {"server": "https://b.example:6443"}})  # type: ignore[attr-defined]
    doc["contexts"].append({"name": "ctx-b", "context": {"cluster": "b"}})  # type: ignore[attr-defined]
    path = _write(tmp_path / "config", doc)
    assert resolve(path, None).context == "ctx-a"
    assert resolve(path, None, profile_context="ctx-b").context == "ctx-b"
    assert resolve(path, "ctx-a", profile_context="ctx-b").context == "ctx-a"


def test_home_kube_config_is_the_default(tmp_path: Path) -> None:
    _write(tmp_path / ".kube" / "config" if (tmp_path / ".kube").mkdir() is None else tmp_path,
           _config("c", "https://c.example", "ctx", "ctx"))  # fmt: skip
    assert resolve(None, None, environ={"HOME": str(tmp_path)}).server == "https://c.example"


def test_relative_certificate_paths_resolve_against_their_file(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    doc = _config("c", "https://c.example", "ctx", "ctx")
    doc["clusters"][0]["cluster"]["certificate-authority"] = "certs/ca.crt"  # type: ignore[index]
    target = resolve(_write(tmp_path / "config", doc), None)
    ca = target.config.cluster["certificate-authority"]
    assert ca.filename() == str(tmp_path / "certs" / "ca.crt")


def test_missing_certificate_file_is_one_clear_error(tmp_path: Path) -> None:
    doc = _config("c", "https://c.example", "ctx", "ctx")
    doc["users"][0]["user"] = {"client-certificate": "nope.crt", "client-key": "nope.key"}  # type: ignore[index]
    with pytest.raises(
        ClusterError, match=rf"context 'ctx': '{tmp_path}/nope.crt' file does not exist"
    ):
        resolve(_write(tmp_path / "config", doc), None)


def test_no_current_context_and_none_given(tmp_path: Path) -> None:
    path = _write(tmp_path / "config", _config("c", "https://c.example", "ctx"))
    with pytest.raises(
        ClusterError, match=r"^no context: .* has no current-context .*\(known: ctx\)$"
    ):
        resolve(path, None)


def test_unreadable_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [\n")
    with pytest.raises(ClusterError, match=r"^kubeconfig .*config: cannot read it: "):
        resolve(path, None)
