"""Load jobs/*.yaml, clusters/*.yaml and trainops.yaml; check them once, at the door.

Two passes per file, both reporting file:line:column:
1. the JSON Schema in `trainops/schemas/` (also what editors use), with a did-you-mean for
   unknown keys (`trainops.jobspec.problems`);
2. cross-field and cross-file rules the schema cannot say: within a file
   (`trainops.jobspec.job`, `trainops.jobspec.cluster`), and here, a job against the clusters it
   targets (namespaces, GPU products, storage classes, DeepSpeed batch at every world size).
Every problem in every file is collected before raising, so one run shows them all.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Collection
from pathlib import Path

from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.core.yamlio import Document
from trainops.facts import deepspeed as ds_facts
from trainops.facts.kubernetes_schemas import parse_version
from trainops.jobspec import (
    consumer_names,
    fits,
    installed,
    model,
    model_size,
    pod_fence,
    podtemplate,
    trainer_v2,
)
from trainops.jobspec.checked import CheckedSpecs, spec_targets
from trainops.jobspec.cluster import build_cluster
from trainops.jobspec.job import build_job
from trainops.jobspec.platform import load_platform
from trainops.jobspec.platform_queues import check_queues
from trainops.jobspec.platform_refs import check_references
from trainops.jobspec.problems import Collector, merge_per_cluster
from trainops.jobspec.settings import delivery_namespaces_apart, load_settings
from trainops.jobspec.spec_files import (
    build_all,
    duplicates,
    load_all,
    read_all,
    yaml_files,
)

# Native sidecars (init containers with restartPolicy Always) are on by default from 1.29.
# https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/
NATIVE_SIDECARS = (1, 29)


def _roles(job: model.TrainingJob) -> list[tuple[list[str | int], model.Role]]:
    """The extra roles with the spec path of their GPUs, for messages."""
    out: list[tuple[list[str | int], model.Role]] = []
    tf, mpi = job.tensorflow, job.mpi
    if tf and tf.parameter_servers:
        out.append((["tensorflow", "parameterServers", "gpus"], tf.parameter_servers))
    if tf and tf.evaluator:
        out.append((["tensorflow", "evaluator", "gpus"], tf.evaluator))
    if mpi:
        out.append((["mpi", "launcher", "gpus"], mpi.launcher))
    return out


def _job_against_clusters(
    job: model.TrainingJob,
    doc: Document,
    clusters: dict[str, model.ClusterProfile],
    invalid: set[str],
) -> list[Problem]:
    """Checks of one job against the clusters it targets (`invalid`: profiles that exist but
    failed their own checks, already reported: nothing more to say about them here)."""
    out = Collector(doc)
    known = [clusters[t.cluster] for t in job.targets if t.cluster in clusters]
    _pods_on_clusters(job, doc, known, out)
    seen: set[str] = set()
    for i, target in enumerate(job.targets):
        where: list[str | int] = ["targets", i]
        cluster = clusters.get(target.cluster)
        if target.cluster in seen:
            out.add([*where, "cluster"], f"cluster `{target.cluster}` is targeted twice")
        seen.add(target.cluster)
        if target.cluster in invalid:
            continue
        if cluster is None:
            hint = difflib.get_close_matches(target.cluster, list(clusters), n=1)
            # `cloud-h100.yaml`, `clusters/cloud-h100`: the profile's file, not its name.
            named = Path(target.cluster).name.removesuffix(".yaml").removesuffix(".yml")
            add = f"; add clusters/{named}.yaml" if named not in clusters else ""
            out.add(
                [*where, "cluster"],
                f"unknown cluster `{target.cluster}`"
                + (f"; did you mean `{hint[0]}`?" if hint else "")
                + f" (known: {', '.join(sorted(clusters)) or 'none'}{add})",
            )
            continue
        for check in TARGET_CHECKS:
            check(job, cluster, target, where, out)
    _namespace_allowed(job, clusters, out)
    _gpus_per_node(job, clusters, out)
    valid = [(clusters[t.cluster], t) for t in job.targets if t.cluster in clusters]
    consumer_names.check_job(job, valid, out)
    return merge_per_cluster(out.problems, [t.cluster for t in job.targets])


def _gpus_per_node(
    job: model.TrainingJob, clusters: dict[str, model.ClusterProfile], out: Collector
) -> None:
    """Each pod fits a node of its GPU product: one problem per spec key, naming every
    target where it does not (one mistake, told once)."""
    for path, gpus in [(["gpusPerReplica"], job.gpus_per_replica)] + [
        (p, role.gpus) for p, role in _roles(job)
    ]:
        small = []
        for target in job.targets:
            cluster = clusters.get(target.cluster)
            if cluster is None:
                continue
            gpu = cluster.gpu(target.gpu_product) if target.gpu_product else cluster.gpus[0]
            if gpu is not None and gpus > gpu.per_node:
                small.append(f"`{gpu.name}` on `{cluster.name}` has {gpu.per_node}")
        if small:
            out.add(path, f"{gpus} GPUs per pod, more than a node holds: {', '.join(small)}")


def _pods_on_clusters(
    job: model.TrainingJob, doc: Document, known: list[model.ClusterProfile], out: Collector
) -> None:
    """The pod fields against every target's core schema and fence; native sidecars."""
    podtemplate.check_fields(doc.data, [c.kubernetes_version for c in known], out)
    if not out.problems:
        pod_fence.check_fence(doc.data, known, out)
        pod_fence.check_claims(job, doc.data, known, out)
        trainer_v2.check_hatch(doc.data, known, out)
    if job.pod.sidecars:
        for profile in known:
            if (parse_version(profile.kubernetes_version) or (0, 0)) < NATIVE_SIDECARS:
                out.add(
                    ["sidecars"],
                    f"cluster `{profile.name}` runs Kubernetes {profile.kubernetes_version}:"
                    " native sidecars need 1.29 or newer (older clusters keep a plain sidecar"
                    " running after training ends, so the job never completes)",
                )


TargetCheck = Callable[
    [model.TrainingJob, model.ClusterProfile, model.Target, list[str | int], Collector], None
]


def _operator_and_installed(
    job: model.TrainingJob,
    cluster: model.ClusterProfile,
    target: model.Target,
    where: list[str | int],
    out: Collector,
) -> None:
    trainer_v2.check_target(job, cluster, where, out)
    installed.check_target(job, cluster, where, out)


def _namespace_allowed(
    job: model.TrainingJob, clusters: dict[str, model.ClusterProfile], out: Collector
) -> None:
    """The job's namespace is allowed on every target: one problem naming each that does not
    allow it (one mistake, told once)."""
    refused: dict[str, model.ClusterProfile] = {}
    for target in job.targets:
        cluster = clusters.get(target.cluster)
        if cluster is not None and job.namespace not in cluster.namespaces:
            refused.setdefault(cluster.name, cluster)
    parts = []
    for cluster in refused.values():
        near = difflib.get_close_matches(job.namespace, cluster.namespaces, n=1)
        parts.append(
            f"cluster `{cluster.name}`"
            + (f"; did you mean `{near[0]}`?" if near else "")
            + f" (allowed: {', '.join(cluster.namespaces)})"
        )
    if parts:
        where = ", nor on ".join(parts)
        out.add(["namespace"], f"namespace `{job.namespace}` is not allowed on {where}")


def _gpus_fit(
    job: model.TrainingJob,
    cluster: model.ClusterProfile,
    target: model.Target,
    where: list[str | int],
    out: Collector,
) -> None:
    """The GPU product is known (named where there are several) and each pod fits a node."""
    if target.gpu_product is None and len(cluster.gpus) > 1 and job.gpus_per_replica:
        names = ", ".join(g.name for g in cluster.gpus)
        out.add(
            where,
            f"cluster `{cluster.name}` has several GPU products: set `gpuProduct` ({names})",
        )
    gpu = cluster.gpu(target.gpu_product) if target.gpu_product else cluster.gpus[0]
    if gpu is None:
        names = ", ".join(
            f"{g.name} ({', '.join(f'{k}={v}' for k, v in sorted(g.node_selector.items()))})"
            for g in cluster.gpus
        )
        out.add(
            [*where, "gpuProduct"],
            f"`gpuProduct: {target.gpu_product}` names no GPU product of cluster"
            f" `{cluster.name}`: write one of its names, or its node label's value"
            f" (has: {names})",
        )
        return


def _network_and_storage(
    job: model.TrainingJob,
    cluster: model.ClusterProfile,
    target: model.Target,
    where: list[str | int],
    out: Collector,
) -> None:
    if job.host_network and not cluster.network.allow_host_network:
        out.add(["hostNetwork"], f"cluster `{cluster.name}` does not allow hostNetwork")
    allowed_classes = {cluster.storage.default_class, *cluster.storage.classes}
    for vol in job.volumes:
        if vol.storage_class and vol.storage_class not in allowed_classes:
            near = difflib.get_close_matches(vol.storage_class, sorted(allowed_classes), n=1)
            out.add(
                ["volumes", vol.name, "storageClass"],
                f"storage class `{vol.storage_class}` is not offered by cluster"
                f" `{cluster.name}`"
                + (f"; did you mean `{near[0]}`?" if near else "")
                + f" ({', '.join(sorted(allowed_classes))})",
            )


def _deepspeed_batch(
    job: model.TrainingJob,
    cluster: model.ClusterProfile,
    target: model.Target,
    where: list[str | int],
    out: Collector,
) -> None:
    """DeepSpeed's batch arithmetic holds at every world size the job runs at there."""
    if not job.deepspeed:
        return
    config = job.deepspeed_config() or {}
    for size in job.world_sizes(target):
        error = ds_facts.batch_error(config, size)
        if error:
            advice = (
                "; an elastic job must not pin train_batch_size: remove it and"
                " DeepSpeed derives it from the world size"
                if job.elastic and ds_facts.TRAIN_BATCH in config
                else ""
            )
            pinned = ds_facts.TRAIN_BATCH in (job.deepspeed.config or {})
            out.add(
                ["deepspeed", "config", ds_facts.TRAIN_BATCH] if pinned else ["deepspeed"],
                f"DeepSpeed config invalid on `{cluster.name}`: {error}{advice}",
            )
            return


TARGET_CHECKS: tuple[TargetCheck, ...] = (
    _operator_and_installed,
    _gpus_fit,
    _network_and_storage,
    _deepspeed_batch,
    fits.check,
)
"""A job against one cluster it targets, in the order the problems are reported."""


def job_against_cluster(
    job: model.TrainingJob, doc: Document, cluster: model.ClusterProfile
) -> list[Problem]:
    """A job's checks against one cluster profile, as the loader runs them (`trainops
    import` checks what it writes with these, so that the render that follows cannot fail)."""
    out = Collector(doc)
    index = next((i for i, t in enumerate(job.targets) if t.cluster == cluster.name), 0)
    installed.check_kueue(cluster, [job], out, ["targets", index, "cluster"])
    return _job_against_clusters(job, doc, {cluster.name: cluster}, set()) + out.problems


def _job_builder(
    root: Path, unchecked: set[str]
) -> Callable[[Document, Collector], model.TrainingJob | None]:
    """`build_job` (`unchecked`: the spec files it does not check), then the job's
    `model.config` read from the repository."""

    def build(doc: Document, out: Collector) -> model.TrainingJob | None:
        job = build_job(doc, out, check=doc.file not in unchecked)
        return model_size.resolve(job, root, out) if job is not None else None

    return build


def load_repository(
    root: Path,
    rule_slugs: Collection[str] = (),
    checked: Callable[[], CheckedSpecs | None] | None = None,
) -> model.Repository:
    """Load and check every input under `root`; raise InputError listing all problems.

    `rule_slugs`: the policy rules a cluster profile's `policy:` may name (the CLI passes
    them; the rules sit above this layer). Empty: names are not checked. `checked`: asked,
    once the job specs are read, which of them to check (`--changed`, which runs git
    meanwhile; None, or its answer None: every one); the others are loaded, not checked.
    """
    root = root.resolve()
    if not (root / paths.JOBS_DIR).is_dir() and not (root / paths.CLUSTERS_DIR).is_dir():
        raise InputError(
            Problem.whole_file(
                str(root),
                f"not a trainops repository: no {paths.JOBS_DIR}/ or {paths.CLUSTERS_DIR}/"
                " here; run from the repository root or pass --root",
            )
        )
    problems: list[Problem] = []
    settings, settings_problems = load_settings(root)
    problems += settings_problems

    build = functools.partial(build_cluster, rule_slugs=rule_slugs)
    loaded = load_all(root / paths.CLUSTERS_DIR, root, build, problems)
    problems += duplicates("cluster", loaded)
    clusters = {cluster.name: cluster for cluster, _ in loaded}
    for cluster, doc in loaded:
        problems += delivery_namespaces_apart(cluster, doc, settings)
    invalid = {p.stem for p in yaml_files(root / paths.CLUSTERS_DIR)} - set(clusters)
    read = read_all(root / paths.JOBS_DIR, root, problems)
    which = checked() if checked is not None else None
    unchecked = {
        doc.file
        for doc in read
        if which is not None
        and isinstance(doc, Document)
        and not which.checks(doc.file, spec_targets(doc.data))
    }
    jobs = build_all(read, _job_builder(root, unchecked), problems)
    problems += duplicates("job", jobs)

    on: dict[str, list[model.TrainingJob]] = {}
    for job, doc in jobs:
        if job.file not in unchecked:
            problems += _job_against_clusters(job, doc, clusters, invalid)
        for name in dict.fromkeys(t.cluster for t in job.targets):
            on.setdefault(name, []).append(job)
    for cluster, doc in loaded:
        out = Collector(doc)
        installed.check_kueue(cluster, on.get(cluster.name, []), out)
        problems += out.problems
    platform, platform_problems = load_platform(root, clusters, invalid)
    problems += platform_problems
    if not platform_problems:
        for cluster, doc in loaded:
            problems += check_references(cluster, doc, platform.get(cluster.name, ()))
            problems += check_queues(cluster, doc, platform.get(cluster.name, ()))
    if problems:
        raise InputError(problems)
    return model.Repository(
        settings=settings,
        jobs=tuple(sorted((j for j, _ in jobs), key=lambda j: j.name)),
        clusters=dict(sorted(clusters.items())),
        platform={name: objs for name, objs in sorted(platform.items()) if objs},
    )
