"""Job lifecycle rules: restart policies, clean-up of finished pods, GitOps re-runs."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict
from trainops.facts.kubeflow import default_clean_pod_policy
from trainops.facts.workloads import RAY_GROUP
from trainops.kube.objects import Object
from trainops.kube.pods import requests_accelerator
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# Replica types that must run to completion in a non-elastic job (not MPI workers, which
# are sshd daemons the launcher drives, nor parameter servers).
_COMPUTE_WORKERS = frozenset({"worker"})
NO_WORKER_RESTART_KINDS = frozenset({"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"})

# Argo CD sync options / Flux annotations that delete and re-create objects.
# https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/
ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
# https://fluxcd.io/flux/components/kustomize/kustomizations/#force
FLUX_FORCE = "kustomize.toolkit.fluxcd.io/force"
RECREATE_OPTIONS = frozenset({"Replace=true", "Force=true"})
# Argo CD runs hooks (its own, and Helm's, which it maps to its own) anew on every sync.
# https://argo-cd.readthedocs.io/en/stable/user-guide/resource_hooks/
HOOK_ANNOTATIONS = ("argocd.argoproj.io/hook", "helm.sh/hook")
# Where the delivery objects keep the sync options that apply to everything they sync.
DELIVERY_SETTINGS: dict[tuple[str, str], tuple[str, ...]] = {
    ("argoproj.io", "Application"): ("spec", "syncPolicy", "syncOptions"),
    ("argoproj.io", "ApplicationSet"): ("spec", "template", "spec", "syncPolicy", "syncOptions"),
    ("kustomize.toolkit.fluxcd.io", "Kustomization"): ("spec", "force"),
}


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
            and not _no_retries(obj)
        ):
            yield Violation(
                f"{pod.replica_type}: {policy} on the workers of a non-elastic job: one lost"
                " pod (preemption, node failure) fails the whole job" + _backoff_unused(obj),
                pod.restart_policy_path,
            )


def _backoff_limit(obj: Object) -> int | None:
    value = obj.run_policy.get("backoffLimit", obj.spec.get("backoffLimit"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _no_retries(obj: Object) -> bool:
    """`backoffLimit: 0`: the author asks for no retry at all, and `Never` on the workers is
    how the operator honours it (a reproduction that must fail visibly, a benchmark run once).
    Training Operator v1.9 `pkg/core/job.go` PastBackoffLimit counts no restart of a `Never`
    replica, and the PyTorchJob controller marks the job Failed on its first failed pod."""
    return _backoff_limit(obj) == 0


def _backoff_unused(obj: Object) -> str:
    limit = _backoff_limit(obj)
    if not limit:
        return ""
    return (
        f"; backoffLimit {limit} never applies: the operator restarts no `Never` replica and"
        " counts none of its restarts"
    )


def _lingering(obj: Object) -> list[str]:
    """Replica types whose pods do not exit when the job is done: MPI workers (sshd daemons
    the launcher drives) and TensorFlow parameter servers (they serve until killed)."""
    kinds = {"MPIJob": {"worker"}, "TFJob": {"ps"}}.get(obj.kind, set())
    return [p.replica_type or "" for p in obj.pods if p.rtype in kinds and (p.replicas or 0) > 0]


def _ttl_missing(obj: Object, ctx: Context) -> Iterator[Violation]:
    """Pods left running after the job finished, holding their GPUs: the kind's operator
    defaults cleanPodPolicy to None and the job keeps daemons. An explicit None (kept on
    purpose, to read their logs) and `Running` or `All` (the recommended settings) are fine."""
    if obj.group == RAY_GROUP and obj.kind == "RayJob":
        yield from _ray_cluster_kept(obj, ctx)
        return
    if not obj.is_kubeflow_job:
        return
    policy = obj.run_policy
    legacy = obj.spec  # MPIJob v1alpha2-style fields directly under spec
    ttl = policy.get("ttlSecondsAfterFinished", legacy.get("ttlSecondsAfterFinished"))
    clean = policy.get("cleanPodPolicy", legacy.get("cleanPodPolicy"))
    if ttl is not None or clean is not None:
        return
    if default_clean_pod_policy(obj.manifest.api_version) != "None":
        return
    lingering = _lingering(obj)
    if lingering:
        yield Violation(
            f"cleanPodPolicy is unset, which {obj.manifest.api_version} {obj.kind} defaults to"
            f" None: the {'/'.join(lingering)} pods never exit by themselves and keep running"
            " (and holding their GPUs) after the job finished; set runPolicy.cleanPodPolicy:"
            " Running (or All)",
            ("spec", "runPolicy") if policy else ("spec",),
        )


def _ray_cluster_kept(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A RayJob that creates its cluster (`rayClusterSpec`) and keeps it once the job is done:
    KubeRay deletes it only with `shutdownAfterJobFinishes: true` (default false) or a
    `deletionStrategy`. Only a cluster holding accelerators is reported: keeping a CPU
    cluster to read its dashboard is a choice."""
    spec = obj.spec
    if spec.get("shutdownAfterJobFinishes") is True or "deletionStrategy" in spec:
        return
    if not as_dict(spec.get("rayClusterSpec")):
        return  # `clusterSelector`: a running cluster the job does not own
    held = [p.replica_type or "pod" for p in obj.pods
            if p.replica_type != "submitter" and requests_accelerator(p, ctx.cluster)]  # fmt: skip
    if held:
        yield Violation(
            "shutdownAfterJobFinishes is not true (KubeRay's default is false): the RayCluster"
            f" this RayJob creates keeps its {'/'.join(held)} pods running, and holding their"
            " accelerators, after the job finished; set `shutdownAfterJobFinishes: true` (with"
            " `ttlSecondsAfterFinished` to keep it a while for the logs)",
            ("spec", "shutdownAfterJobFinishes")
            if "shutdownAfterJobFinishes" in spec
            else ("spec",),
        )


def _sync_options(value: object) -> set[str]:
    """Argo CD sync options from an annotation string or a `syncOptions` list."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    return {str(item).replace(" ", "") for item in items}


def _gitops_rerun(obj: Object, ctx: Context) -> Iterator[Violation]:
    if (obj.group, obj.kind) in DELIVERY_SETTINGS:
        yield from _delivery_rerun(obj)
        return
    if not (obj.is_training_job or obj.kind == "Job"):
        return
    options = _sync_options(obj.annotations.get(ARGO_SYNC_OPTIONS, ""))
    for option in sorted(RECREATE_OPTIONS & options):
        yield Violation(
            f"sync option {option} makes Argo CD delete and re-create this job: a finished"
            " job runs again",
            ("metadata", "annotations", ARGO_SYNC_OPTIONS),
        )
    # Flux compares the value case-insensitively (fluxcd/pkg ssa: strings.EqualFold).
    if str(obj.annotations.get(FLUX_FORCE, "")).lower() == "enabled":
        yield Violation(
            "Flux force: enabled re-creates this job when it changes: a finished job runs again",
            ("metadata", "annotations", FLUX_FORCE),
        )
    for hook in HOOK_ANNOTATIONS:
        if hook in obj.annotations:
            yield Violation(
                f"`{hook}: {obj.annotations[hook]}` makes this job a hook, which Argo CD"
                " creates anew on every sync: the training runs again each time",
                ("metadata", "annotations", hook),
            )
    if ctx.cluster is not None:
        yield from _ttl_rerun(obj, ctx)


def _delivery_rerun(obj: Object) -> Iterator[Violation]:
    """Settings of the delivery objects themselves that re-create every job they deliver."""
    path = DELIVERY_SETTINGS[obj.group, obj.kind]
    node: object = obj.data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    for option in sorted(RECREATE_OPTIONS & _sync_options(node)):
        yield Violation(
            f"{obj.kind} sync option {option}: Argo CD deletes and re-creates every changed"
            " job it syncs, and a finished job runs again",
            path,
        )
    if obj.kind == "Kustomization" and obj.spec.get("force") is True:
        yield Violation(
            "Flux `force: true` deletes and re-creates every job whose immutable spec changed:"
            " a finished job runs again; set it per object (the force annotation) only on"
            " jobs meant to be replaced",
            ("spec", "force"),
        )


def _ttl_rerun(obj: Object, ctx: Context) -> Iterator[Violation]:
    assert ctx.cluster is not None
    delivery = ctx.cluster.delivery
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
        code="TO402",
        severity=Severity.WARNING,
        summary="`Always` on a batch replica, or `Never` on workers of a non-elastic job;"
        " written or defaulted (TFJob, XGBoostJob and JAXJob default to `Never`). A job with"
        " `runPolicy.backoffLimit: 0` asks for no retry, and `Never` is how it gets none.",
        why="Always restarts a replica that finished, so the job never completes; Never on"
        " workers turns one preempted pod into a failed job, and a `backoffLimit` above 0"
        " never applies to it (the operator counts restarts of OnFailure, Always and"
        " ExitCode replicas only).",
        fix="Set `restartPolicy: OnFailure` on the replica spec (or `ExitCode` with retryable"
        " exit codes); the operator's default is not always safe.",
        example="Worker: {replicas: 4, restartPolicy: Always}",
        check=_restart_policy,
    ),
    Rule(
        slug="ttl-missing",
        code="TO403",
        severity=Severity.WARNING,
        summary="A job whose finished state leaves pods running: cleanPodPolicy unset where the"
        " kind's operator defaults it to None (Training Operator v1 MPIJob, TFJob) and the job"
        " has replicas that never exit (MPI workers, TF parameter servers), and no TTL; a"
        " RayJob whose own cluster holds accelerators and is not shut down when the job"
        " finishes (`shutdownAfterJobFinishes` unset or false, no `deletionStrategy`).",
        why="MPI workers run sshd until killed and parameter servers serve until killed: with"
        " cleanPodPolicy None they keep running, and holding their GPUs and quota, after the"
        " job is done. Completed pods of the other replica types hold nothing, and an explicit"
        " None is a deliberate choice (keep them to read their logs). MPIJob v2beta1 defaults"
        " to Running, which deletes the workers and keeps the launcher's log as the result."
        " A RayJob's cluster (head and workers) outlives the job unless it is shut down.",
        fix="Set `runPolicy.cleanPodPolicy: Running` (or `All`): the operator deletes what still"
        " runs and the job object stays as the record (a TTL would delete the job, which GitOps"
        " re-creates). A RayJob: `shutdownAfterJobFinishes: true`.",
        example="apiVersion: kubeflow.org/v1\nkind: MPIJob  # no runPolicy.cleanPodPolicy",
        check=_ttl_missing,
    ),
    Rule(
        slug="gitops-rerun-risk",
        code="TO404",
        severity=Severity.ERROR,
        summary="A job that GitOps delivery would run again: TTL-deleted jobs re-created by"
        " Argo CD / Flux (with a cluster profile), Replace/Force sync options on a job or its"
        " Application(Set), Flux force, or a job used as an Argo CD hook.",
        why="A TTL deletes the finished job; Argo CD (automated sync, self-heal) or Flux"
        " (every interval) sees it missing from the cluster and applies it again, re-running"
        " hours of training and overwriting checkpoints.",
        fix="Drop `ttlSecondsAfterFinished` and use `cleanPodPolicy: All`; remove Replace/Force"
        " sync options and hook annotations from jobs and their Applications; keep Flux"
        " `force` off (per-object annotation only where a job is meant to be replaced).",
        example="runPolicy: {ttlSecondsAfterFinished: 3600}  # on an Argo CD self-heal cluster",
        check=_gitops_rerun,
        references=(
            "https://argo-cd.readthedocs.io/en/stable/user-guide/auto_sync/",
            "https://fluxcd.io/flux/components/kustomize/kustomizations/",
        ),
    ),
)
