"""The checks within a job spec file (`jobs/<name>.yaml`) that its schema cannot say:
the name against the file, volumes, env, commands and launchers, frameworks' blocks, and
DeepSpeed settings against the program's flags. They read the spec as written, before
defaults: some are about what the author set."""

from __future__ import annotations

import posixpath
from typing import Any

from trainops.facts import deepspeed as ds_facts
from trainops.facts.interpreter import instead, interpreter_options
from trainops.facts.kubeflow import FRAMEWORK_KINDS, REPLICA_TYPES
from trainops.facts.names import RENDERED_CONTAINERS, RENDERED_VOLUMES
from trainops.facts.scratch import SCRATCH_VOLUMES
from trainops.jobspec import metadata as meta
from trainops.jobspec import podtemplate, schemas
from trainops.jobspec.byte_sizes import check_byte_sizes
from trainops.jobspec.images import check_images
from trainops.jobspec.problems import Collector, dotted
from trainops.jobspec.trainer_flags import check_engine

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
        "TF_CONFIG",
    }
)
PYTHON_LAUNCHERS = ("python", "python3")
SINGLE_NODE_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
DISTRIBUTED_LAUNCHERS = ("torchrun", "deepspeed", "mpirun", "horovodrun")
# overlays/<cluster>/platform/ holds the cluster's platform manifests, beside the job directories.
RESERVED_JOB_NAME = "platform"
# The replica types each framework's job kind can have (`replicaPodTemplates` keys): the
# operator's replica types of the kind the framework renders to.
FRAMEWORK_REPLICA_TYPES: dict[str, tuple[str, ...]] = {
    framework: REPLICA_TYPES[kind] for framework, kind in FRAMEWORK_KINDS.items()
}


def _metadata_checks(d: dict[str, Any], out: Collector) -> None:
    """Labels and annotations: Kubernetes syntax, and no control surface (spec/metadata.py)."""
    for field in ("labels", "annotations"):
        values = d.get(field, {})
        for key, value in values.items():
            problem = meta.key_problem(str(key))
            if problem:
                out.add([field, key], f"`{field}` key {key!r} is invalid: {problem}")
                continue
            who = meta.owner(str(key))
            if who:
                out.add(
                    [field, key],
                    f"`{field}` key {key!r} is a control surface set by {who}, not by a job:"
                    " remove it",
                )
            if field == "labels":
                value_problem = meta.label_value_problem(str(value))
                if value_problem:
                    out.add([field, key], f"label {key!r}: {value_problem}, got {value!r}")
        size = sum(len(str(k)) + len(str(v)) for k, v in values.items())
        if field == "annotations" and size > meta.MAX_ANNOTATIONS_BYTES:
            out.add([field], f"annotations total {size} bytes, over Kubernetes' 256 KiB")


def _command_checks(d: dict[str, Any], out: Collector) -> None:
    """`command` is the program, started by python (or, for an MPI job whose ranks run
    `mpi.rankProgram: executable`, any program): trainops generates its launcher."""
    cmd, framework = d["command"], d["framework"]
    executable = framework == "mpi" and (d.get("mpi") or {}).get("rankProgram") == "executable"
    head = str(cmd[0]).rsplit("/", 1)[-1]
    if head in DISTRIBUTED_LAUNCHERS or any("torch.distributed" in c for c in cmd):
        out.add(
            ["command", 0],
            f"`command` is the training program, not its launcher: {LAUNCHED_BY[framework]};"
            " write e.g. [python, -m, trainer]",
        )
    elif executable:
        if d.get("deepspeed"):
            out.add(
                ["deepspeed"],
                "`deepspeed` needs a python program: remove it or `mpi.rankProgram: executable`",
            )
    elif cmd[0] not in PYTHON_LAUNCHERS:
        hint = (
            "; for another program under mpirun set `mpi.rankProgram: executable`"
            if framework == "mpi"
            else ""
        )
        out.add(["command", 0], f"`command` must start with python, got {cmd[0]!r}{hint}")
    elif len(cmd) < 2:
        out.add(["command"], "`command` needs the program after python: [python, train.py]")
    elif framework == "pytorch" and (options := interpreter_options(cmd)):
        out.add(
            ["command", 1],
            f"trainops runs the program under torchrun, which cannot pass python's"
            f" {', '.join(options)} (the pod would stop on `unrecognized arguments`): "
            + "; ".join(instead(option) for option in options),
        )
    elif cmd[1] == "-m" and len(cmd) < 3:
        out.add(["command"], "`python -m` needs a module name")


def check_job(d: dict[str, Any], out: Collector, stem: str) -> None:
    """Checks within one job file, on the spec as written (before defaults: some checks are
    about what the author set, e.g. `zeroStage` next to a config that sets the stage)."""
    _metadata_checks(d, out)
    _name_checks(d, out, stem)
    cmd = d.get("command")
    if cmd:
        _command_checks(d, out)
    elif d["framework"] == "mpi":
        out.add(["command"], "an MPI job needs `command`: what each rank runs after `mpirun`")
    _framework_checks(d, out)
    _elastic_checks(d, out)
    _volume_checks(d, out)
    check_byte_sizes(d, out)
    check_images(d, out)
    check_engine(d, out)
    _env_checks(d, out)
    port = d.get("metricsPort", schemas.default(schemas.JOB, "metricsPort"))
    if port in {23456, 29400, 29500}:
        out.add(["metricsPort"], f"port {port} is used by the torch rendezvous: pick another")
    ds = d.get("deepspeed")
    if ds:
        ours = list(d.get("command") or ())[-2:] == ["-m", "trainer"]
        _deepspeed_settings(ds, [str(a) for a in d.get("args", ())], ours, out)
    _pod_field_checks(d, out)


def _name_checks(d: dict[str, Any], out: Collector, stem: str) -> None:
    if d["name"] != stem:
        out.add(["name"], f"`name` must equal the file name `{stem}`, got {d['name']!r}")
    if d["name"] == RESERVED_JOB_NAME:
        out.add(
            ["name"],
            f"`{RESERVED_JOB_NAME}` is reserved: overlays/<cluster>/{RESERVED_JOB_NAME}/ holds"
            " the cluster's platform manifests; rename the job (and its file)",
        )


def _elastic_checks(d: dict[str, Any], out: Collector) -> None:
    """The elastic range is a range, and holds the job's and every target's `replicas`."""
    elastic = d.get("elastic")
    if not elastic:
        return
    lo, hi = elastic["minReplicas"], elastic["maxReplicas"]
    if lo > hi:
        out.add(["elastic", "minReplicas"], f"`minReplicas` ({lo}) > `maxReplicas` ({hi})")
    if not lo <= d["replicas"] <= hi:
        out.add(["replicas"], f"`replicas` must be within elastic [{lo}, {hi}]")
    for i, t in enumerate(d["targets"]):
        if "replicas" in t and not lo <= t["replicas"] <= hi:
            out.add(
                ["targets", i, "replicas"],
                f"`targets[{i}].replicas` must be within elastic [{lo}, {hi}], got {t['replicas']}",
            )


def _volume_checks(d: dict[str, Any], out: Collector) -> None:
    """Each volume an existing or a new claim, mountable by every pod; `dataSync`'s volume."""
    volumes = d.get("volumes", {})
    for name, vol in volumes.items():
        has_claim, has_size = "claimName" in vol, "size" in vol
        if not has_claim and not has_size:
            out.add(
                ["volumes", name],
                "give `claimName` (an existing claim), `size` (a new claim) or both (a new"
                " claim of that name)",
            )
        if not has_size and ("storageClass" in vol or "accessMode" in vol):
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


def _env_checks(d: dict[str, Any], out: Collector) -> None:
    """No variable trainops or the operator sets, none both plain and from a Secret."""
    secret_env = d.get("secretEnv", {})
    env_blocks: list[tuple[list[str | int], dict[str, Any]]] = [(["env"], d.get("env", {}))]
    env_blocks += [(["targets", i, "env"], t.get("env", {})) for i, t in enumerate(d["targets"])]
    for where, env in env_blocks:
        name = dotted(where)
        for key in env:
            if key in RESERVED_ENV:
                out.add([*where, key], f"`{name}.{key}` is set by trainops/the operator: remove it")
            if key in secret_env:
                out.add([*where, key], f"`{name}.{key}` is also in `secretEnv`: keep one")


def _pod_field_checks(d: dict[str, Any], out: Collector) -> None:
    """The first-class pod fields and the escape hatch against what trainops renders."""
    podtemplate.check_metadata(d, out)
    framework = d["framework"]
    types = FRAMEWORK_REPLICA_TYPES.get(framework, ())
    if d.get("elastic") and framework == "pytorch":
        types = ("Worker",)
    for rtype in sorted(d.get("replicaPodTemplates", {})):
        if rtype not in types:
            out.add(
                ["replicaPodTemplates", rtype],
                f"this job renders no `{rtype}` replicas (it has: {', '.join(types)})",
            )
    _extra_volume_checks(d, out)
    _sidecar_checks(d, out)


def _extra_volume_checks(d: dict[str, Any], out: Collector) -> None:
    """`extraVolumes` and `extraVolumeMounts` beside the volumes and mounts trainops renders."""
    job_volumes = d.get("volumes", {})
    taken = set(job_volumes) | RENDERED_VOLUMES
    extra = {}
    for i, vol in enumerate(d.get("extraVolumes", ())):
        name = vol.get("name")
        if name in taken or name in extra:
            out.add(
                ["extraVolumes", i, "name"],
                f"volume `{name}` is already in the pod: pick another name (or change that"
                " volume with `podTemplate`)",
            )
        extra[name] = i
    paths_taken: dict[Any, str] = {"/dev/shm": "sharedMemory"}
    for name, path in SCRATCH_VOLUMES:
        paths_taken.setdefault(path, f"{name} emptyDir (read-only root filesystem)")
    # Two mounts at one path: the API server refuses every pod (`mountPath: must be unique`).
    # The mapping keeps the file's order (the loaders build it in order): the later one is told.
    for n, v in job_volumes.items():
        path = v.get("mountPath")
        # `/data/` is `/data` to the container runtime, which mounts the second over the first.
        same = posixpath.normpath(path) if isinstance(path, str) else path
        if same in paths_taken:
            out.add(
                ["volumes", n, "mountPath"],
                f"`{path}` is already mounted by `{paths_taken[same]}`: the API server refuses"
                " a pod with two mounts at one path; give each volume its own mountPath",
            )
        paths_taken.setdefault(same, f"volumes.{n}")
    for i, mount in enumerate(d.get("extraVolumeMounts", ())):
        name, path = mount.get("name"), mount.get("mountPath")
        if name not in extra and name not in job_volumes:
            out.add(
                ["extraVolumeMounts", i, "name"],
                f"no volume `{name}` in `extraVolumes` or `volumes`",
            )
        if path in paths_taken:
            out.add(
                ["extraVolumeMounts", i, "mountPath"],
                f"`{path}` is already mounted by `{paths_taken[path]}`",
            )
        paths_taken[path] = f"extraVolumeMounts[{i}]"


def _sidecar_checks(d: dict[str, Any], out: Collector) -> None:
    names: set[str] = set()
    for i, sidecar in enumerate(d.get("sidecars", ())):
        name = sidecar.get("name")
        if name in RENDERED_CONTAINERS or name in names:
            out.add(["sidecars", i, "name"], f"container `{name}` is already in the pod")
        names.add(name)
        if sidecar.get("restartPolicy", "Always") != "Always":
            out.add(
                ["sidecars", i, "restartPolicy"],
                "a sidecar is a native sidecar (`restartPolicy: Always`): leave it out; an"
                " init container that must finish goes in `podTemplate.spec.initContainers`",
            )


LAUNCHED_BY = {
    "pytorch": "trainops generates torchrun around it from the operator's PET_* variables",
    "tensorflow": "a TFJob runs it in every replica and the operator writes TF_CONFIG",
    "mpi": "trainops generates the Launcher's mpirun around it",
}
# The blocks that belong to one framework, and the framework they need.
FRAMEWORK_BLOCKS = {
    "elastic": "pytorch",
    "deepspeed": "pytorch",
    "tensorflow": "tensorflow",
    "mpi": "mpi",
}


def _framework_checks(d: dict[str, Any], out: Collector) -> None:
    """The framework's own blocks only, and their settings that the schema cannot relate."""
    framework = d["framework"]
    for block, needs in FRAMEWORK_BLOCKS.items():
        if block in d and framework != needs:
            out.add([block], f"`{block}` needs `framework: {needs}`, this job is `{framework}`")
    evaluator = (d.get("tensorflow") or {}).get("evaluator") or {}
    if evaluator.get("replicas", 1) != 1:
        out.add(
            ["tensorflow", "evaluator", "replicas"],
            f"TensorFlow runs one Evaluator, got `replicas: {evaluator['replicas']}`",
        )
    mpi = d.get("mpi") or {}
    if mpi.get("apiVersion") == "kubeflow.org/v1":
        for key in ("implementation", "sshAuthMountPath"):
            if key in mpi and (key, mpi[key]) != ("implementation", "OpenMPI"):
                out.add(
                    ["mpi", key],
                    f"`mpi.{key}` needs `apiVersion: kubeflow.org/v2beta1`: the Training"
                    " Operator's v1 MPIJob runs Open MPI over kubectl exec",
                )
    for i, arg in enumerate(mpi.get("mpirunArgs", ())):
        if arg.startswith("-") and len(arg.split()) > 1:
            option, _, rest = arg.partition(" ")
            out.add(
                ["mpi", "mpirunArgs", i],
                f"`{arg}` is an option and its value in one argv element: mpirun gets one word;"
                f" write them as two items, `{option}` and `{rest.strip()}`",
            )


# What a program's precision flag says, in the spellings trainers use (ours, Lightning, HF).
PRECISION_WORDS = {
    "bf16": "bf16", "bf16-mixed": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "16": "fp16", "16-mixed": "fp16", "float16": "fp16",
    "fp32": "fp32", "32": "fp32", "float32": "fp32",
}  # fmt: skip


_DEFAULT_PRECISION = schemas.default(schemas.JOB, "deepspeed.precision")


def _deepspeed_settings(ds: dict[str, Any], args: list[str], ours: bool, out: Collector) -> None:
    """The DeepSpeed fields, the full `config` and the program's flags must say one thing:
    the trainer refuses to start on a contradiction, and DeepSpeed itself on bf16 + fp16.
    `ours`: the program is our trainer, which (like DeepSpeed alone) fills no `"auto"`."""
    config = ds.get("config") or {}
    for key, name in (
        (ds_facts.MICRO_BATCH, "microBatchPerGpu"),
        (ds_facts.GRAD_ACCUM, "gradientAccumulation"),
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
    enabled = ds_facts.enabled_precisions(config)
    if len(enabled) == 2:
        out.add(["deepspeed", "config"], "config enables both bf16 and fp16: DeepSpeed refuses")
    elif enabled and "precision" in ds and ds["precision"] != enabled[0]:
        out.add(
            ["deepspeed", "precision"],
            f"`precision: {ds['precision']}` contradicts the config, which enables"
            f" {enabled[0]}: keep one",
        )
    chosen = str(ds.get("precision", ""))
    said = config[chosen].get("enabled") if isinstance(config.get(chosen), dict) else None
    if said is False:
        out.add(
            ["deepspeed", "config", chosen, "enabled"],
            f"`precision: {chosen}` contradicts the config, which disables {chosen}: keep one",
        )
    elif said == ds_facts.AUTO and ours:
        out.add(
            ["deepspeed", "config", chosen, "enabled"],
            f"`enabled: auto` is filled in only by the HF Trainer: DeepSpeed drops it, so under"
            f" our trainer {chosen} is off and the job trains in fp32 (`precision: {chosen}`"
            " says otherwise): remove the key (trainops enables the job's precision)",
        )
    effective = enabled[0] if enabled else ds.get("precision", _DEFAULT_PRECISION)
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
