"""Run kubeconform (when on PATH) against the same schemas, offline.

kubeconform cannot use kubernetes-validate's files as they are: they carry an
absolute `$id` (https://kubernetes.io/api/...) and refs like
`/api/_definitions.json#/$defs/...`, which kubeconform would try to download.
`write_schema_layout` writes a directory it can use: the core kind files with
`$id` removed and refs made relative (`_definitions.json#/$defs/...`) under
`_kubernetes/`, next to a copy of `schemas/crds` (whose refs already point at
`../_kubernetes/_definitions.json`). `kubeconform_command` gives the exact flags.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from trainops.core.findings import Finding, Severity
from trainops.core.limits import TOOL_TIMEOUT_SECONDS, run_tool
from trainops.validate.pipeline import RULE_SCHEMA
from trainops.validate.schemas import CRD_SCHEMA_DIR, core_schema_dir

CORE_SUBDIR = "_kubernetes"


def write_schema_layout(dest: Path, kubernetes_version: str) -> None:
    """Schemas for kubeconform's `-schema-location` (see `kubeconform_command`)."""
    shutil.copytree(CRD_SCHEMA_DIR, dest, dirs_exist_ok=True)
    core = dest / CORE_SUBDIR
    core.mkdir(parents=True, exist_ok=True)
    for path in sorted(core_schema_dir(kubernetes_version).glob("*.json")):
        if path.name == "all.json":
            continue
        schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        schema.pop("$id", None)
        text = json.dumps(schema).replace('"/api/_definitions.json#', '"_definitions.json#')
        (core / path.name).write_text(text, encoding="utf-8")


def kubeconform_command(schema_dir: Path, kubernetes_version: str) -> list[str]:
    """The flags we run kubeconform with (documented in docs/validate.md)."""
    return [
        "kubeconform",
        "-strict",
        "-summary",
        "-output",
        "json",
        "-kubernetes-version",
        f"{kubernetes_version}.0",
        "-schema-location",
        f"{schema_dir}/{CORE_SUBDIR}/{{{{.ResourceKind}}}}{{{{.KindSuffix}}}}.json",
        "-schema-location",
        f"{schema_dir}/{{{{.Group}}}}/{{{{.ResourceKind}}}}_{{{{.ResourceAPIVersion}}}}.json",
        "-",
    ]


def run_kubeconform(yaml_text: str, schema_dir: Path, kubernetes_version: str) -> tuple[int, str]:
    """Exit code and JSON output of kubeconform on a YAML stream (stdin)."""
    try:
        proc = run_tool(kubeconform_command(schema_dir, kubernetes_version), yaml_text)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {TOOL_TIMEOUT_SECONDS:g}s"
    return proc.returncode, proc.stdout + proc.stderr


def findings(texts: dict[str, str], kubernetes_version: str) -> list[Finding]:
    """A `schema` error per YAML stream (source -> text) kubeconform rejects, with its output."""
    out: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="trainops-kubeconform-") as tmp:
        write_schema_layout(Path(tmp), kubernetes_version)
        for source, text in sorted(texts.items()):
            code, output = run_kubeconform(text, Path(tmp), kubernetes_version)
            if code != 0:
                message = f"kubeconform: {output.strip()}"
                out.append(Finding(RULE_SCHEMA, Severity.ERROR, message, file=source))
    return out
