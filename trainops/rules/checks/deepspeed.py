"""DeepSpeed rules: the config reachable from the pod (a `--deepspeed` path resolved through
the volume mounts, subPath, items and projected sources to a ConfigMap key in the same
manifest set) against the job's world size, elasticity and the launcher's own flags."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_int, as_list
from trainops.facts import deepspeed as ds_facts
from trainops.kube.launch import Launch, launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate
from trainops.kube.torchrun import nproc_per_pod
from trainops.render.common import SOURCE_ANNOTATION
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

# Program flags that carry the DeepSpeed config path (HF Trainer, DeepSpeed examples, ours).
CONFIG_FLAGS = ("deepspeed_config", "deepspeed")
MICRO_FLAGS = ("per_device_train_batch_size", "train_micro_batch_size_per_gpu", "micro_batch_size")
ACCUM_FLAGS = ("gradient_accumulation_steps",)


@dataclass
class DeepSpeedConfig:
    pod: PodTemplate
    container: Container
    launch: Launch
    file: str
    """The path the program reads."""
    flag_path: Path
    source: str
    """`ConfigMap <name> key <key>`."""
    config: dict[str, Any] | None
    error: str | None = None


def _config_flag(launch: Launch) -> tuple[str, Path] | None:
    options = launch.program_options
    for key in CONFIG_FLAGS:
        value = options.get(key)
        if value is not None and value[0]:
            return value
    return None


def _projected_key(source: dict[str, Any], relative: str) -> str | None:
    """The key a configMap/secret volume source projects at `relative`: with `items`, only the
    keys they list (at their `path`); without, every key at its own name."""
    items = [as_dict(raw) for raw in as_list(source.get("items"))]
    if not items:
        return relative
    wanted = posixpath.normpath(relative)
    for item in items:
        if posixpath.normpath(str(item.get("path"))) == wanted:
            return str(item.get("key"))
    return None


def _from_sources(
    obj: Object, ctx: Context, sources: list[dict[str, Any]], relative: str
) -> tuple[str, str | None] | None:
    """(source, text) of the file `relative` inside a volume built from these sources (one
    `configMap`, or a `projected` volume's list); None when we cannot see what provides it."""
    missing: str | None = None
    unseen = False
    for source in sources:
        cm = as_dict(source.get("configMap"))
        if not cm:
            # A secret, downwardAPI or token source may provide the file: we cannot see it.
            unseen = unseen or any(
                k in source for k in ("secret", "downwardAPI", "serviceAccountToken")
            )
            continue
        key = _projected_key(cm, relative)
        if key is None:
            continue
        configmap = ctx.find("ConfigMap", str(cm.get("name")), obj.namespace)
        if configmap is None:
            unseen = True
            continue
        described = f"ConfigMap `{configmap.name}` key `{key}`"
        data = as_dict(configmap.data.get("data"))
        if key in data:
            return described, str(data[key])
        missing = missing or described
    if unseen or missing is None:
        return None
    return missing, None


def _resolve(
    obj: Object, ctx: Context, pod: PodTemplate, c: Container, file: str
) -> tuple[str, str | None] | None:
    """(source, text) of the ConfigMap key mounted at `file`; None when not reachable."""
    mounts = sorted(c.volume_mounts, key=lambda m: -len(str(m.get("mountPath", ""))))
    for mount in mounts:
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        sub_path = mount.get("subPath")
        if sub_path:
            if file != mount_path:
                continue
            relative = str(sub_path)
        elif file.startswith(mount_path + "/"):
            relative = file[len(mount_path) + 1 :]
        else:
            continue
        volume, _ = pod.volumes.get(str(mount.get("name")), ({}, ()))
        if "configMap" in volume:
            return _from_sources(obj, ctx, [volume], relative)
        projected = as_dict(volume.get("projected"))
        if projected:
            sources = [as_dict(raw) for raw in as_list(projected.get("sources"))]
            return _from_sources(obj, ctx, sources, relative)
        return None
    return None


def deepspeed_configs(obj: Object, ctx: Context) -> list[DeepSpeedConfig]:
    found = []
    for pod in obj.pods:
        for c in pod.containers():
            for launch in launches(c):
                flag = _config_flag(launch)
                if flag is None:
                    continue
                file, path = flag
                resolved = _resolve(obj, ctx, pod, c, posixpath.normpath(file))
                if resolved is None:
                    continue
                source, text = resolved
                if text is None:
                    found.append(
                        DeepSpeedConfig(pod, c, launch, file, path, source, None,
                                        f"{source} does not exist")
                    )  # fmt: skip
                    continue
                try:
                    config = json.loads(text)
                except json.JSONDecodeError as err:
                    found.append(
                        DeepSpeedConfig(pod, c, launch, file, path, source, None,
                                        f"{source} is not valid JSON: {err}")
                    )  # fmt: skip
                    continue
                except RecursionError:  # JSON nested past the decoder's stack (issue 35.8)
                    found.append(
                        DeepSpeedConfig(pod, c, launch, file, path, source, None,
                                        f"{source} nests too deep to be a DeepSpeed config")
                    )  # fmt: skip
                    continue
                found.append(DeepSpeedConfig(pod, c, launch, file, path, source, as_dict(config)))
    return found


def _procs(obj: Object, pod: PodTemplate, ctx: Context) -> int:
    for value, _ in nproc_per_pod(obj, pod):
        if isinstance(value, int):
            return value
    return max(pod.gpus(ctx.cluster), 1)


# World sizes named in one message at most: an elastic range spans up to 150,000.
SHOWN_SIZES = 10


def world_sizes(obj: Object, ds: DeepSpeedConfig, ctx: Context) -> range:
    """Every world size the job can run at (several for an elastic job)."""
    procs = _procs(obj, ds.pod, ctx)
    if obj.kind == "MPIJob":
        slots = as_int(obj.spec.get("slotsPerWorker")) or 1
        worker = obj.replica("Worker")
        size = slots * ((worker.replicas or 0) if worker else 0)
        return range(size, size + 1)
    nodes = as_int((ds.launch.option("num_nodes") or ("", ()))[0])
    return ds_facts.world_sizes(
        procs, obj.pod_count() if nodes is None else nodes, obj.elastic_range
    )


def _batch(config: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    def num(key: str) -> int | None:
        return as_int(config.get(key))  # "auto" (HF Trainer fills it) -> None

    return (num(ds_facts.TRAIN_BATCH), num(ds_facts.MICRO_BATCH), num(ds_facts.GRAD_ACCUM))


def batch_problem(config: dict[str, Any], world: int) -> str | None:
    """What DeepSpeed's batch check says at this world size (`trainops.facts.deepspeed`); a
    config without batch keys gets them from its launcher (e.g. the HF Trainer)."""
    return ds_facts.batch_error(config, world, require_batch=False)


def _batch_mismatch(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_training_job:
        return
    for ds in deepspeed_configs(obj, ctx):
        if ds.config is None:
            yield Violation(f"--deepspeed {ds.file}: {ds.error}", ds.flag_path)
            continue
        worlds = world_sizes(obj, ds, ctx)
        if obj.elastic_policy is None and len(worlds) == 1:
            problem = batch_problem(ds.config, worlds[0])
            if problem:
                yield Violation(f"{ds.source}: {problem}; DeepSpeed refuses to start", ds.flag_path)
        _, mb, ga = _batch(ds.config)
        options = ds.launch.program_options
        for keys, config_value, what in (
            (MICRO_FLAGS, mb, "micro batch"),
            (ACCUM_FLAGS, ga, "accumulation"),
        ):
            for key in keys:
                if key in options and config_value is not None:
                    value = as_int(options[key][0])
                    if value is not None and value != config_value:
                        yield Violation(
                            f"--{key.replace('_', '-')}={value} but {ds.source} sets {what}"
                            f" {config_value}",
                            options[key][1],
                        )


def _elastic_batch(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.elastic_policy is None:
        return
    for ds in deepspeed_configs(obj, ctx):
        if ds.config is None or as_dict(ds.config.get("elasticity")).get("enabled") is True:
            continue
        tb, mb, ga = _batch(ds.config)
        worlds = world_sizes(obj, ds, ctx)
        if tb is not None and mb is not None and ga is not None and len(worlds) > 1:
            yield Violation(
                f"{ds.source} pins train_batch_size, micro batch and accumulation, which fit"
                f" one world size only, but the job runs at {worlds[0]} to {worlds[-1]}"
                " processes: DeepSpeed fails at start-up after a resize; pin two of them (or"
                " enable DeepSpeed elasticity)",
                ds.flag_path,
            )
            continue
        bad = [w for w in worlds if batch_problem(ds.config, w)]
        if bad:
            shown = ", ".join(map(str, bad[:SHOWN_SIZES]))
            if len(bad) > SHOWN_SIZES:
                shown += f", ... ({len(bad)} in all)"
            yield Violation(
                f"{ds.source} is invalid at world size(s) {shown} inside the"
                f" elastic range: {batch_problem(ds.config, bad[0])}",
                ds.flag_path,
            )


def _precision(obj: Object, ctx: Context) -> Iterator[Violation]:
    for ds in deepspeed_configs(obj, ctx):
        if ds.config is None:
            continue
        enabled = ds_facts.enabled_precisions(ds.config)
        bf16, fp16 = "bf16" in enabled, "fp16" in enabled
        if bf16 and fp16:
            yield Violation(f"{ds.source} enables both bf16 and fp16", ds.flag_path)
        options = ds.launch.program_options
        if "bf16" in options and fp16 and not bf16:
            yield Violation(f"--bf16 but {ds.source} enables fp16", options["bf16"][1])
        if "fp16" in options and bf16 and not fp16:
            yield Violation(f"--fp16 but {ds.source} enables bf16", options["fp16"][1])


def _stage_ignored(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A `zero_optimization` key the config's stage never reads (`ds_facts.ZERO_KEY_STAGES`).
    A job trainops rendered is told at its spec's line by the loader instead."""
    if SOURCE_ANNOTATION in obj.annotations:
        return
    seen: set[str] = set()
    for ds in deepspeed_configs(obj, ctx):
        if ds.config is None or ds.source in seen:
            continue
        seen.add(ds.source)
        for key, stages in ds_facts.ignored_zero_keys(ds.config):
            yield Violation(
                f"{ds.source}: `zero_optimization.{key}` does nothing at ZeRO stage"
                f" {ds_facts.zero_stage(ds.config)}: DeepSpeed {ds_facts.DEEPSPEED_VERSION}"
                f" reads it only at {ds_facts.stages_text(stages)}",
                ds.flag_path,
            )


RULES = (
    Rule(
        slug="deepspeed-batch-mismatch",
        code="TO701",
        severity=Severity.ERROR,
        summary="DeepSpeed config `train_batch_size` != micro batch x accumulation x world"
        " size, or the launcher's batch arguments disagree with the config.",
        why="DeepSpeed checks the batch identity at initialisation and raises, after the pods"
        " have been scheduled and the model loaded.",
        fix="Pin at most two of train_batch_size / train_micro_batch_size_per_gpu /"
        " gradient_accumulation_steps (or `auto`) and let DeepSpeed derive the third.",
        example='{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2,'
        ' "gradient_accumulation_steps": 8}  # 32 GPUs',
        check=_batch_mismatch,
        references=("https://www.deepspeed.ai/docs/config-json/#batch-size-related-parameters",),
    ),
    Rule(
        slug="deepspeed-elastic-batch",
        code="TO702",
        severity=Severity.ERROR,
        summary="An elastic job whose DeepSpeed config pins train batch, micro batch and"
        " accumulation, or becomes invalid at some world size inside [min, max].",
        why="After an elastic resize torchrun restarts every rank at the new world size;"
        " DeepSpeed then rejects the config and the job dies instead of scaling.",
        fix="Pin the micro batch and accumulation only (the global batch then follows the"
        " world size), or enable DeepSpeed's `elasticity` section.",
        example="elasticPolicy: {minReplicas: 2, maxReplicas: 8}\n"
        '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2,'
        ' "gradient_accumulation_steps": 8}',
        check=_elastic_batch,
        references=(
            "https://www.deepspeed.ai/docs/config-json/#elastic-training-config-v01-and-v02",
        ),
    ),
    Rule(
        slug="deepspeed-stage-ignored",
        code="TO704",
        severity=Severity.WARNING,
        summary="A DeepSpeed `zero_optimization` option the configured ZeRO stage never reads"
        " (e.g. `allgather_bucket_size` under stage 3).",
        why="DeepSpeed accepts the key and passes it only to the optimizer of other stages"
        " (runtime/engine.py `_configure_zero_optimizer`): the setting does nothing, and"
        " whoever tunes it is misled.",
        fix="Remove it, or use the stage's own option (stage 3: `stage3_prefetch_bucket_size`,"
        " `stage3_max_live_parameters`, ...).",
        example='{"zero_optimization": {"stage": 3, "allgather_bucket_size": 5e8}}',
        check=_stage_ignored,
        references=(
            "https://www.deepspeed.ai/docs/config-json/#zero-optimizations-for-fp16-training",
        ),
    ),
    Rule(
        slug="deepspeed-precision-conflict",
        code="TO703",
        severity=Severity.ERROR,
        summary="bf16 and fp16 both enabled, or the launcher's precision flag contradicts the"
        " config.",
        why="DeepSpeed refuses a config with both; HF Trainer raises when --bf16/--fp16"
        " disagrees with the DeepSpeed config.",
        fix="Enable one precision, in the config, and pass the matching flag (or none).",
        example='--bf16 with {"fp16": {"enabled": true}}',
        check=_precision,
    ),
)
