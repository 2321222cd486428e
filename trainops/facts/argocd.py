"""Argo CD's sync waves: the annotation and the waves trainops gives each kind of object.

Within one Application, gitops-engine sorts sync tasks by phase, then wave, then kind, then
name, applies one wave at a time and starts the next only when every task of the current
wave has succeeded (and its resources are healthy): argoproj/argo-cd v3.5.1
`gitops-engine/pkg/sync/sync_tasks.go` (`syncTasks.Less`), `gitops-engine/pkg/sync/
sync_context.go` (`Sync`: "Filtering tasks in correct phase and wave"),
`gitops-engine/pkg/sync/syncwaves/waves.go` (`Wave`: the annotation, an integer, default 0).
Waves order objects of one Application only: what must exist before a job is delivered by
the same Application (docs/gitops.md).
"""

from __future__ import annotations

SYNC_WAVE = "argocd.argoproj.io/sync-wave"

# Platform objects (queues, flavors, priority classes, networks): before everything that
# names them. A wave the platform team set in clusters/<name>/manifests/ is kept.
PLATFORM_WAVE = "-2"
# Claims, generated configs and Trainer v2 runtimes: before the jobs that mount or reference
# them (the Trainer's TrainJob webhook refuses a TrainJob whose runtime does not exist,
# kubeflow/trainer v2.3 `pkg/webhooks/trainjob_webhook.go`).
BEFORE_JOBS_WAVE = "-1"
# Jobs: Argo CD's default wave, stated for the conformance tests.
JOBS_WAVE = "0"
