"""Load jobs/*.yaml, clusters/*.yaml and trainops.yaml; check them once, at the door.

Two passes per file, both reporting file:line:column:
1. the JSON Schema in `schemas/` (also what editors use), with a did-you-mean for unknown keys;
2. cross-field and cross-file rules the schema cannot say (elastic bounds, targets naming
   real clusters, GPU products, namespaces, DeepSpeed batch sizes at every world size).
Every problem in every file is collected before raising, so one run shows them all.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import jsonschema

from trainops import paths
from trainops.errors import InputError, Problem
from trainops.render import deepspeed as ds_config
from trainops.spec import model
from trainops.yamlio import Document, load_file

# Names the generated manifests set; a job setting them would fight the operator or the cluster.
RESERVED_ENV = frozenset(
    {
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "NCCL_IB_DISABLE",
        "NCCL_IB_HCA",
        "NCCL_IB_GID_INDEX",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_SOCKET_IFNAME",
        "TRAINOPS_METRICS_PORT",
    }
)
T = TypeVar("T")
PYTHON_LAUNCHERS = ("python", "python3")
SINGLE_NODE_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
DISTRIBUTED_LAUNCHERS = ("torchrun", "deepspeed", "mpirun", "horovodrun")


@functools.cache
def _validator(schema_name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((paths.SCHEMA_DIR / f"{schema_name}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class _Collector:
    """Problems of one file, positioned through its document."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[Problem] = []

    def add(self, path: Sequence[str | int], message: str) -> None:
        line, column = self.doc.position(path)
        self.problems.append(Problem(self.doc.file, line, column, message))


def _schema_problems(doc: Document, schema_name: str, out: _Collector) -> None:
    errors = sorted(_validator(schema_name).iter_errors(doc.data), key=lambda e: list(e.path))
    # (mapping path, key) that a did-you-mean already names: its "required" error is noise.
    suggested: set[tuple[tuple[str | int, ...], str]] = set()
    for err in errors:
        path = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = sorted(err.schema.get("properties", {}))
            for key in err.instance:
                if key in allowed:
                    continue
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                did_you_mean = f"; did you mean `{hint[0]}`?" if hint else ""
                suggested.update((tuple(path), h) for h in hint)
                where = f" in `{_dotted(path)}`" if path else ""
                out.add(
                    [*path, key],
                    f"unknown key `{key}`{where}{did_you_mean} (allowed: {', '.join(allowed)})",
                )
    for err in errors:
        path = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            continue
        if err.validator == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            missing = [k for k in missing if (tuple(path), k) not in suggested]
            if missing:
                where = f" in `{_dotted(path)}`" if path else ""
                keys = ", ".join(f"`{k}`" for k in missing)
                out.add(path, f"missing required key {keys}{where}")
        else:
            value = json.dumps(err.instance)
            if len(value) > 60:
                value = value[:57] + "..."
            out.add(path, f"`{_dotted(path)}` {_explain(err)}, got {value}")


def _explain(err: jsonschema.ValidationError) -> str:
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "enum":
        return "must be one of " + ", ".join(json.dumps(v) for v in err.validator_value)
    if err.validator == "const":
        return f"must be {json.dumps(err.validator_value)}"
    if err.validator == "pattern":
        desc = schema.get("description")
        return f"must match {err.validator_value}" + (f" ({desc})" if desc else "")
    if err.validator == "type":
        return f"must be of type {err.validator_value}"
    if err.validator in {"minimum", "maximum", "minItems", "minLength", "minProperties"}:
        return f"must satisfy {err.validator} {err.validator_value}"
    return "is invalid: " + str(err.message)


def _single_mapping(path: Path, root: Path) -> Document | list[Problem]:
    """The file's one document, which must be a mapping; else the problems."""
    display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    try:
        docs = load_file(path, display)
    except InputError as err:
        return err.problems
    if len(docs) != 1:
        found = len(docs)
        message = f"expected exactly one YAML document, found {found}"
        return [Problem(display, None, None, message)]
    if not isinstance(docs[0].data, dict):
        return [
            Problem(display, docs[0].line, 1, "expected a mapping (key: value) at the top level")
        ]
    return docs[0]


def _load_all(
    directory: Path,
    root: Path,
    build: Callable[[Document, _Collector], T | None],
    problems: list[Problem],
) -> list[tuple[T, Document]]:
    """Build an object from every YAML file of `directory`, collecting every problem."""
    built: list[tuple[T, Document]] = []
    for path in _yaml_files(directory):
        doc = _single_mapping(path, root)
        if isinstance(doc, list):
            problems += doc
            continue
        out = _Collector(doc)
        item = build(doc, out)
        problems += out.problems
        if item is not None:
            built.append((item, doc))
    return built


def _yaml_files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(p for p in directory.iterdir() if p.suffix in {".yaml", ".yml"})


# ---------------------------------------------------------------- cluster profiles


def _cluster(doc: Document, out: _Collector) -> model.ClusterProfile | None:
    _schema_problems(doc, "clusterprofile", out)
    if out.problems:
        return None
    d: dict[str, Any] = doc.data
    stem = Path(doc.file).stem
    if d["name"] != stem:
        out.add(["name"], f"`name` must equal the file name `{stem}`, got {d['name']!r}")
    net = d["network"]
    rdma = net.get("rdma")
    if net["transport"] == "rdma" and rdma is None:
        out.add(["network"], "transport `rdma` needs a `network.rdma` block (hca, gidIndex, ...)")
    if net["transport"] == "tcp" and rdma is not None:
        out.add(["network", "rdma"], "`network.rdma` is only for transport `rdma`: remove it")
    sched = d.get("scheduler", {"name": "default"})
    if sched["name"] == "kueue" and "queue" not in sched:
        out.add(["scheduler"], "scheduler `kueue` needs `queue` (the LocalQueue jobs are sent to)")
    names = [g["name"] for g in d["gpus"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            out.add(["gpus", i, "name"], f"GPU product `{name}` is listed twice")
    delivery = d["delivery"]
    if "server" in delivery and "destinationName" in delivery:
        out.add(["delivery"], "give either `server` or `destinationName`, not both")
    if out.problems:
        return None
    storage = d["storage"]
    return model.ClusterProfile(
        name=d["name"],
        file=doc.file,
        kubernetes_version=d["kubernetesVersion"],
        network=model.Network(
            transport=net["transport"],
            socket_interface=net["socketInterface"],
            allow_host_network=net.get("allowHostNetwork", False),
            rdma=model.Rdma(
                hca=rdma["hca"],
                gid_index=rdma["gidIndex"],
                gdr_level=str(rdma["gdrLevel"]),
                device_resource=rdma["deviceResource"],
                device_count=rdma.get("deviceCount", 1),
                multus_network=rdma.get("multusNetwork"),
            )
            if rdma
            else None,
        ),
        gpus=tuple(
            model.GpuProduct(
                name=g["name"],
                resource=g.get("resource", "nvidia.com/gpu"),
                per_node=g["perNode"],
                node_selector=dict(g["nodeSelector"]),
                tolerations=tuple(g.get("tolerations", ())),
            )
            for g in d["gpus"]
        ),
        scheduler=model.Scheduler(
            kind=sched["name"], queue=sched.get("queue"), priority_class=sched.get("priorityClass")
        ),
        storage=model.Storage(
            default_class=storage["defaultClass"], classes=tuple(storage.get("classes", ()))
        ),
        namespaces=tuple(d["namespaces"]),
        delivery=model.Delivery(
            tool=delivery["tool"],
            destination_server=delivery.get("server", "https://kubernetes.default.svc"),
            destination_name=delivery.get("destinationName"),
            self_heal=delivery.get("selfHeal", False),
            prune=delivery.get("prune", True),
        ),
        crds=d.get("crds"),
        policy=dict(d.get("policy", {})),
        context=d.get("context"),
    )


# ---------------------------------------------------------------- training jobs


def _secret_env(raw: dict[str, Any]) -> tuple[model.SecretEnv, ...]:
    return tuple(
        model.SecretEnv(name=k, secret=v["secret"], key=v["key"]) for k, v in sorted(raw.items())
    )


def _env(doc: Document, path: list[str | int]) -> dict[str, str]:
    """An env mapping as strings, each value as the user wrote it: YAML reads `2.10` as the
    float 2.1 and `1e-3` as 0.001, but a variable's value is text."""
    raw: dict[str, Any] = doc.data
    for part in path:
        raw = raw.get(str(part), {}) if isinstance(raw, dict) else {}
    return {
        k: v if isinstance(v, str) else (doc.scalar_text([*path, k]) or str(v))
        for k, v in sorted(raw.items())
    }


def _job_structure(d: dict[str, Any], out: _Collector, stem: str) -> None:
    """Checks within one job file."""
    if d["name"] != stem:
        out.add(["name"], f"`name` must equal the file name `{stem}`, got {d['name']!r}")
    cmd = d["command"]
    if cmd[0] in DISTRIBUTED_LAUNCHERS or any("torch.distributed" in c for c in cmd):
        out.add(
            ["command", 0],
            "`command` is the training program, not its launcher: trainops generates torchrun"
            " around it from the operator's PET_* variables; write e.g. [python, -m, trainer]",
        )
    elif cmd[0] not in PYTHON_LAUNCHERS:
        out.add(["command", 0], f"`command` must start with python, got {cmd[0]!r}")
    elif cmd[1] == "-m" and len(cmd) < 3:
        out.add(["command"], "`python -m` needs a module name")
    elastic = d.get("elastic")
    if elastic:
        lo, hi = elastic["minReplicas"], elastic["maxReplicas"]
        if lo > hi:
            out.add(["elastic", "minReplicas"], f"`minReplicas` ({lo}) > `maxReplicas` ({hi})")
        if not lo <= d["replicas"] <= hi:
            out.add(["replicas"], f"`replicas` must be within elastic [{lo}, {hi}]")
        for i, t in enumerate(d["targets"]):
            if "replicas" in t and not lo <= t["replicas"] <= hi:
                out.add(["targets", i, "replicas"], f"must be within elastic [{lo}, {hi}]")
    volumes = d.get("volumes", {})
    for name, vol in volumes.items():
        has_claim, has_size = "claimName" in vol, "size" in vol
        if has_claim == has_size:
            out.add(
                ["volumes", name],
                "give exactly one of `claimName` (an existing claim) or `size` (a new claim)",
            )
        if has_claim and ("storageClass" in vol or "accessMode" in vol):
            out.add(["volumes", name], "`storageClass`/`accessMode` only apply to a new claim")
        most_pods = max(d["replicas"], (d.get("elastic") or {}).get("maxReplicas", 0))
        for t in d["targets"]:
            most_pods = max(most_pods, t.get("replicas", 0))
        if vol.get("accessMode") in SINGLE_NODE_MODES and most_pods > 1:
            out.add(
                ["volumes", name, "accessMode"],
                f"`{vol['accessMode']}` mounts on one node, but this job runs up to {most_pods}"
                " pods on different nodes: the others never start; use ReadWriteMany"
                " (or ReadOnlyMany for a dataset)",
            )
    sync = d.get("dataSync")
    if sync and sync["volume"] not in volumes:
        out.add(["dataSync", "volume"], f"no volume named {sync['volume']!r} in `volumes`")
    env, secret_env = d.get("env", {}), d.get("secretEnv", {})
    for key in env:
        if key in RESERVED_ENV:
            out.add(["env", key], f"`{key}` is set by trainops/the operator: remove it")
        if key in secret_env:
            out.add(["env", key], f"`{key}` is also in `secretEnv`: keep one")
    port = d.get("metricsPort", 9090)
    if port in {23456, 29400, 29500}:
        out.add(["metricsPort"], f"port {port} is used by the torch rendezvous: pick another")
    ds = d.get("deepspeed")
    if ds:
        _deepspeed_settings(ds, [str(a) for a in d.get("args", ())], out)


# What a program's precision flag says, in the spellings trainers use (ours, Lightning, HF).
PRECISION_WORDS = {
    "bf16": "bf16", "bf16-mixed": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "16": "fp16", "16-mixed": "fp16", "float16": "fp16",
    "fp32": "fp32", "32": "fp32", "float32": "fp32",
}  # fmt: skip


def _deepspeed_settings(ds: dict[str, Any], args: list[str], out: _Collector) -> None:
    """The DeepSpeed fields, the full `config` and the program's flags must say one thing:
    the trainer refuses to start on a contradiction, and DeepSpeed itself on bf16 + fp16."""
    config = ds.get("config") or {}
    for key, name in (
        (ds_config.MICRO_BATCH, "microBatchPerGpu"),
        (ds_config.GRAD_ACCUM, "gradientAccumulation"),
    ):
        if key in config and name in ds:
            out.add(["deepspeed", name], f"`{name}` and config `{key}` both set: keep one")
    stage = (config.get("zero_optimization") or {}).get("stage")
    if "zeroStage" in ds and stage is not None and stage != ds["zeroStage"]:
        out.add(
            ["deepspeed", "config", "zero_optimization", "stage"],
            f"config `zero_optimization.stage` ({stage}) contradicts `zeroStage`"
            f" ({ds['zeroStage']}): keep one",
        )
    enabled = [
        mode
        for mode, keys in (("bf16", ("bf16", "bfloat16")), ("fp16", ("fp16",)))
        if any((config.get(k) or {}).get("enabled") for k in keys)
    ]
    if len(enabled) == 2:
        out.add(["deepspeed", "config"], "config enables both bf16 and fp16: DeepSpeed refuses")
    elif enabled and "precision" in ds and ds["precision"] != enabled[0]:
        out.add(
            ["deepspeed", "precision"],
            f"`precision: {ds['precision']}` contradicts the config, which enables"
            f" {enabled[0]}: keep one",
        )
    effective = enabled[0] if enabled else ds.get("precision", "bf16")
    for i, arg in enumerate(args):
        value = None
        if arg.startswith("--precision="):
            value = arg.split("=", 1)[1]
        elif arg == "--precision" and i + 1 < len(args):
            value = args[i + 1]
        said = PRECISION_WORDS.get((value or "").lower())
        if said and said != effective:
            out.add(
                ["args", i],
                f"`{arg}` contradicts the DeepSpeed precision ({effective}): the trainer"
                " refuses to start; drop the flag (the DeepSpeed config decides) or change"
                " `deepspeed.precision`",
            )


def _job(doc: Document, out: _Collector) -> model.TrainingJob | None:
    _schema_problems(doc, "trainingjob", out)
    if out.problems:
        return None
    d: dict[str, Any] = doc.data
    _job_structure(d, out, Path(doc.file).stem)
    if out.problems:
        return None
    vols = []
    for name, v in sorted(d.get("volumes", {}).items()):
        vols.append(
            model.Volume(
                name=name,
                mount_path=v["mountPath"],
                read_only=v.get("readOnly", name == "dataset"),
                claim_name=v.get("claimName", f"{d['name']}-{name}"),
                create="size" in v,
                size=v.get("size"),
                storage_class=v.get("storageClass"),
                access_mode=v.get("accessMode", "ReadWriteMany"),
            )
        )
    el = d.get("elastic")
    ds = d.get("deepspeed")
    sync = d.get("dataSync")
    rp = d.get("runPolicy", {})
    return model.TrainingJob(
        name=d["name"],
        namespace=d["namespace"],
        file=doc.file,
        framework=d["framework"],
        image=d["image"],
        command=tuple(d["command"]),
        args=tuple(str(a) for a in d.get("args", ())),
        replicas=d["replicas"],
        gpus_per_replica=d["gpusPerReplica"],
        cpu=str(d["resources"]["cpu"]),
        memory=str(d["resources"]["memory"]),
        elastic=model.Elastic(el["minReplicas"], el["maxReplicas"], el.get("maxRestarts", 3))
        if el
        else None,
        deepspeed=model.DeepSpeed(
            zero_stage=ds.get("zeroStage", 3),
            precision=ds.get("precision", "bf16"),
            micro_batch_per_gpu=ds.get("microBatchPerGpu"),
            gradient_accumulation=ds.get("gradientAccumulation"),
            config=ds.get("config"),
            config_flag=ds.get("configFlag", "--deepspeed-config"),
        )
        if ds is not None
        else None,
        volumes=tuple(vols),
        data_sync=model.DataSync(
            image=sync["image"],
            command=tuple(sync["command"]),
            volume=sync["volume"],
            env=_env(doc, ["dataSync", "env"]),
            secret_env=_secret_env(sync.get("secretEnv", {})),
        )
        if sync
        else None,
        shared_memory=str(d.get("sharedMemory", "16Gi")),
        env=_env(doc, ["env"]),
        secret_env=_secret_env(d.get("secretEnv", {})),
        metrics_port=d.get("metricsPort", 9090),
        run_policy=model.RunPolicy(
            clean_pod_policy=rp.get("cleanPodPolicy", "All"),
            backoff_limit=rp.get("backoffLimit"),
            active_deadline_seconds=rp.get("activeDeadlineSeconds"),
            ttl_seconds_after_finished=rp.get("ttlSecondsAfterFinished"),
        ),
        targets=tuple(
            model.Target(
                cluster=t["cluster"],
                gpu_product=t.get("gpuProduct"),
                replicas=t.get("replicas"),
                env=_env(doc, ["targets", i, "env"]),
            )
            for i, t in enumerate(d["targets"])
        ),
        host_network=d.get("hostNetwork", False),
        termination_grace_seconds=d.get(
            "terminationGracePeriodSeconds", model.TrainingJob.termination_grace_seconds
        ),
        labels=dict(d.get("labels", {})),
        annotations=dict(d.get("annotations", {})),
    )


def world_sizes(job: model.TrainingJob, target: model.Target) -> list[int]:
    """Every data-parallel world size the job can run at on `target`."""
    procs = max(job.gpus_per_replica, 1)
    if job.elastic:
        return [n * procs for n in range(job.elastic.min_replicas, job.elastic.max_replicas + 1)]
    return [(target.replicas or job.replicas) * procs]


def _job_against_clusters(
    job: model.TrainingJob,
    doc: Document,
    clusters: dict[str, model.ClusterProfile],
    invalid: set[str],
) -> list[Problem]:
    """Checks of one job against the clusters it targets (`invalid`: profiles that exist but
    failed their own checks, already reported: nothing more to say about them here)."""
    out = _Collector(doc)
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
            out.add(
                [*where, "cluster"],
                f"unknown cluster `{target.cluster}`"
                + (f"; did you mean `{hint[0]}`?" if hint else "")
                + f" (known: {', '.join(sorted(clusters)) or 'none'}; add clusters/"
                f"{target.cluster}.yaml)",
            )
            continue
        if job.namespace not in cluster.namespaces:
            out.add(
                ["namespace"],
                f"namespace `{job.namespace}` is not allowed on cluster `{cluster.name}`"
                f" (allowed: {', '.join(cluster.namespaces)})",
            )
        if target.gpu_product is None and len(cluster.gpus) > 1 and job.gpus_per_replica:
            names = ", ".join(g.name for g in cluster.gpus)
            out.add(
                where,
                f"cluster `{cluster.name}` has several GPU products: set `gpuProduct` ({names})",
            )
        gpu = cluster.gpu(target.gpu_product) if target.gpu_product else cluster.gpus[0]
        if gpu is None:
            names = ", ".join(g.name for g in cluster.gpus)
            out.add(
                [*where, "gpuProduct"],
                f"cluster `{cluster.name}` has no GPU product"
                f" `{target.gpu_product}` (has: {names})",
            )
        elif job.gpus_per_replica > gpu.per_node:
            out.add(
                ["gpusPerReplica"],
                f"{job.gpus_per_replica} GPUs per pod, but a"
                f" `{gpu.name}` node of `{cluster.name}` has {gpu.per_node}",
            )
        if job.host_network and not cluster.network.allow_host_network:
            out.add(["hostNetwork"], f"cluster `{cluster.name}` does not allow hostNetwork")
        allowed_classes = {cluster.storage.default_class, *cluster.storage.classes}
        for vol in job.volumes:
            if vol.storage_class and vol.storage_class not in allowed_classes:
                out.add(
                    ["volumes", vol.name, "storageClass"],
                    f"storage class `{vol.storage_class}` is not offered by cluster"
                    f" `{cluster.name}` ({', '.join(sorted(allowed_classes))})",
                )
        if job.deepspeed:
            config = ds_config.build_config(job.deepspeed)
            for size in world_sizes(job, target):
                error = ds_config.batch_error(config, size)
                if error:
                    advice = (
                        "; an elastic job must not pin train_batch_size: remove it and"
                        " DeepSpeed derives it from the world size"
                        if job.elastic and ds_config.TRAIN_BATCH in config
                        else ""
                    )
                    pinned = ds_config.TRAIN_BATCH in (job.deepspeed.config or {})
                    out.add(
                        ["deepspeed", "config", ds_config.TRAIN_BATCH] if pinned else ["deepspeed"],
                        f"DeepSpeed config invalid on `{cluster.name}`: {error}{advice}",
                    )
                    break
    return out.problems


def _settings(root: Path) -> tuple[model.RepoSettings, list[Problem]]:
    path = root / paths.SETTINGS_FILE
    if not path.exists():
        return model.RepoSettings(), []
    doc = _single_mapping(path, root)
    if isinstance(doc, list):
        return model.RepoSettings(), doc
    out = _Collector(doc)
    _schema_problems(doc, "trainops", out)
    if out.problems:
        return model.RepoSettings(), out.problems
    keys = {
        "repoURL": "repo_url",
        "revision": "revision",
        "argocdNamespace": "argocd_namespace",
        "argocdProject": "argocd_project",
        "fluxNamespace": "flux_namespace",
    }
    return model.RepoSettings(**{keys[k]: v for k, v in doc.data.items() if k in keys}), []


def load_repository(root: Path) -> model.Repository:
    """Load and check every input under `root`; raise InputError listing all problems."""
    root = root.resolve()
    if not (root / paths.JOBS_DIR).is_dir() and not (root / paths.CLUSTERS_DIR).is_dir():
        raise InputError(
            Problem(
                str(root),
                None,
                None,
                f"not a trainops repository: no {paths.JOBS_DIR}/ or {paths.CLUSTERS_DIR}/"
                " here; run from the repository root or pass --root",
            )
        )
    problems: list[Problem] = []
    settings, settings_problems = _settings(root)
    problems += settings_problems

    loaded = _load_all(root / paths.CLUSTERS_DIR, root, _cluster, problems)
    clusters = {cluster.name: cluster for cluster, _ in loaded}
    invalid = {p.stem for p in _yaml_files(root / paths.CLUSTERS_DIR)} - set(clusters)
    jobs = _load_all(root / paths.JOBS_DIR, root, _job, problems)

    for job, doc in jobs:
        problems += _job_against_clusters(job, doc, clusters, invalid)
    if problems:
        raise InputError(problems)
    return model.Repository(
        settings=settings,
        jobs=tuple(sorted((j for j, _ in jobs), key=lambda j: j.name)),
        clusters=dict(sorted(clusters.items())),
    )
