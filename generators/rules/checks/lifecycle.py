"""Job lifecycle rules: restart policies, clean-up of finished pods, GitOps re-runs."""

from __future__ import annotations

from collections.abc import Iterator

from generators.findings import Severity
from generators.rules.context import Context, Object
from generators.rules.model import Rule, Violation

# Replica types that must run to completion in a non-elastic job (not MPI workers, which
# are sshd daemons the launcher drives, nor parameter servers).
_COMPUTE_WORKERS = frozenset({"worker"})
NO_WORKER_RESTART_KINDS = frozenset({"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"})

# Argo CD sync options / Flux annotations that delete and re-create objects.
# https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/
ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
# https://fluxcd.io/flux/components/kustomize/kustomizations/#force
FLUX_FORCE = "kustomize.toolkit.fluxcd.io/force"


def _restart_policy(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_training_job:
        return
    for pod in obj.pods:
        # The effective policy: written, else the one the operator (or the API) defaults to.
        default = f"the {obj.kind} default" if obj.is_kubeflow_job else "the Pod default"
        policy = f"restartPolicy {pod.restart_policy}" + (
            "" if pod.restart_policy_explicit else f" ({default} when unset)"
        )
        if pod.restart_policy == "Always":
            yield Violation(
                f"{pod.replica_type or 'pod'}: {policy} restarts a finished replica forever;"
                " the job never completes",
                pod.restart_policy_path,
            )
        elif (
            pod.restart_policy == "Never"
            and pod.rtype in _COMPUTE_WORKERS
            and obj.kind in NO_WORKER_RESTART_KINDS
            and obj.is_kubeflow_job
            and obj.elastic_policy is None
        ):
            yield Violation(
                f"{pod.replica_type}: {policy} on the workers of a non-elastic job: one lost"
                " pod (preemption, node failure) fails the whole job",
                pod.restart_policy_path,
            )


def _ttl_missing(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_kubeflow_job:
        return
    policy = obj.run_policy
    legacy = obj.spec  # MPIJob v1alpha2-style fields directly under spec
    ttl = policy.get("ttlSecondsAfterFinished", legacy.get("ttlSecondsAfterFinished"))
    clean = policy.get("cleanPodPolicy", legacy.get("cleanPodPolicy"))
    if ttl is None and clean != "All":
        yield Violation(
            "no runPolicy.ttlSecondsAfterFinished and cleanPodPolicy is"
            f" {clean or 'unset'}: finished pods pile up; set cleanPodPolicy: All (deletes the"
            " pods, keeps the job as a record — safe under GitOps)",
            ("spec", "runPolicy") if policy else ("spec",),
        )


def _gitops_rerun(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None or not (obj.is_training_job or obj.kind == "Job"):
        return
    delivery = ctx.cluster.delivery
    options = obj.annotations.get(ARGO_SYNC_OPTIONS, "")
    for option in ("Replace=true", "Force=true"):
        if option in options.replace(" ", "").split(","):
            yield Violation(
                f"sync option {option} makes Argo CD delete and re-create this job: a finished"
                " job runs again",
                ("metadata", "annotations", ARGO_SYNC_OPTIONS),
            )
    if obj.annotations.get(FLUX_FORCE) == "enabled":
        yield Violation(
            "Flux force: enabled re-creates this job when it changes: a finished job runs again",
            ("metadata", "annotations", FLUX_FORCE),
        )
    if obj.is_kubeflow_job:
        ttl_path: tuple[str | int, ...] = ("spec", "runPolicy", "ttlSecondsAfterFinished")
        ttl = obj.run_policy.get("ttlSecondsAfterFinished")
    else:
        ttl_path = ("spec", "ttlSecondsAfterFinished")
        ttl = obj.spec.get("ttlSecondsAfterFinished")
    if ttl is None:
        return
    if delivery.tool == "flux":
        how = "Flux re-applies the Kustomization every interval and re-creates the deleted job"
    elif delivery.self_heal:
        how = "Argo CD self-heal re-creates the deleted job within minutes"
    else:
        how = "Argo CD's automated sync re-creates the deleted job on the next commit"
    yield Violation(
        f"ttlSecondsAfterFinished deletes the finished job, and {how} on cluster"
        f" `{ctx.cluster.name}`: the training runs again; use cleanPodPolicy: All without a TTL",
        ttl_path,
    )


RULES = (
    Rule(
        slug="restart-policy-unsafe",
        severity=Severity.WARNING,
        summary="`Always` on a batch replica, or `Never` on workers of a non-elastic job;"
        " written or defaulted (TFJob, XGBoostJob and JAXJob default to `Never`).",
        why="Always restarts a replica that finished, so the job never completes; Never on"
        " workers turns one preempted pod into a failed job.",
        fix="Set `restartPolicy: OnFailure` on the replica spec (or `ExitCode` with retryable"
        " exit codes); the operator's default is not always safe.",
        example="Worker: {replicas: 4, restartPolicy: Always}",
        check=_restart_policy,
    ),
    Rule(
        slug="ttl-missing",
        severity=Severity.WARNING,
        summary="No `ttlSecondsAfterFinished` and cleanPodPolicy not `All`: finished pods pile up.",
        why="Completed and failed pods keep their logs but also their IPs, volumes and quota"
        " objects; over weeks they clutter the namespace.",
        fix="Set `runPolicy.cleanPodPolicy: All`: the operator deletes the pods and the job"
        " object stays as the record (a TTL would delete the job, which GitOps re-creates).",
        example="runPolicy: {cleanPodPolicy: None}",
        check=_ttl_missing,
    ),
    Rule(
        slug="gitops-rerun-risk",
        severity=Severity.ERROR,
        summary="A job that GitOps delivery would run again: TTL-deleted jobs re-created by"
        " Argo CD / Flux, or Replace/Force sync options on a job.",
        why="A TTL deletes the finished job; Argo CD (automated sync, self-heal) or Flux"
        " (every interval) sees it missing from the cluster and applies it again, re-running"
        " hours of training and overwriting checkpoints.",
        fix="Drop `ttlSecondsAfterFinished` and use `cleanPodPolicy: All`; remove Replace/Force"
        " sync options from jobs.",
        example="runPolicy: {ttlSecondsAfterFinished: 3600}  # on an Argo CD self-heal cluster",
        check=_gitops_rerun,
        needs_cluster=True,
        references=(
            "https://argo-cd.readthedocs.io/en/stable/user-guide/auto_sync/",
            "https://fluxcd.io/flux/components/kustomize/kustomizations/",
        ),
    ),
)
