"""Argo CD resource health checks for Kubeflow jobs: Lua scripts and the argocd-cm patch.

The Lua lives in `lua/*.lua` beside this module (a real file: editors, linters
and the lupa tests read the same bytes Argo CD runs), and is embedded in an
`argocd-cm` patch under the `resource.customizations.health.<group>_<kind>` keys
Argo CD reads: https://argo-cd.readthedocs.io/en/stable/operator-manual/health/
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from trainops.facts.kubeflow import KUBEFLOW_GROUP, TRAINING_JOB_KINDS
from trainops.facts.trainer import TRAINER_GROUP, TRAINJOB
from trainops.jobspec.model import RepoSettings

# One script serves all three v1 kinds: they share the operator's condition types.
JOB_HEALTH_SCRIPT = "kubeflow-job-health.lua"
# Trainer v2's TrainJob has other conditions (Complete, not Succeeded; no Running).
TRAINJOB_HEALTH_SCRIPT = "trainjob-health.lua"

# Argo CD's own ConfigMap; its name is fixed by Argo CD.
ARGOCD_CM = "argocd-cm"


# A script's line `--#include <file>` is replaced with that file's text after its `--#body` line:
# the condition helpers both scripts use are written once (`lua/conditions.lua`), and Argo CD
# still gets one self-contained chunk per kind (it has no `require` for health scripts).
INCLUDE = "--#include "
BODY = "--#body\n"


def _packaged(name: str) -> str:
    return resources.files("trainops.render.gitops").joinpath("lua", name).read_text("utf-8")


def lua_source(name: str = JOB_HEALTH_SCRIPT) -> str:
    """Text of a packaged Lua health script, its includes expanded: what Argo CD runs."""
    lines = []
    for line in _packaged(name).splitlines(keepends=True):
        if line.startswith(INCLUDE):
            included = _packaged(line.removeprefix(INCLUDE).strip())
            lines.append(included.split(BODY, 1)[1])
        else:
            lines.append(line)
    return "".join(lines)


def health_key(group: str, kind: str) -> str:
    """The argocd-cm key of a health customization (`/` is not allowed in keys, hence `_`)."""
    return f"resource.customizations.health.{group}_{kind}"


def argocd_cm_patch(settings: RepoSettings) -> dict[str, Any]:
    """A patch for Argo CD's `argocd-cm` adding the Kubeflow job health checks.

    It holds only our keys: apply it as a kustomize patch on the Argo CD
    install (or with server-side apply), never as a replacement of argocd-cm.
    """
    script = lua_source()
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ARGOCD_CM,
            "namespace": settings.argocd_namespace,
            "labels": {
                "app.kubernetes.io/name": ARGOCD_CM,
                "app.kubernetes.io/part-of": "argocd",
            },
        },
        "data": {
            **{health_key(KUBEFLOW_GROUP, job.kind): script for job in TRAINING_JOB_KINDS},
            health_key(TRAINER_GROUP, TRAINJOB): lua_source(TRAINJOB_HEALTH_SCRIPT),
        },
    }
