"""A training job spec (`jobs/<name>.yaml`): its schema, the checks within the file that
the schema cannot say (`trainops.jobspec.job_checks`), and the typed `TrainingJob` built from it
with the schema's defaults filled in."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from trainops.core.errors import Problem
from trainops.core.yamlio import Document
from trainops.jobspec import model, model_size, schemas
from trainops.jobspec.byte_sizes import shared_memory_notes
from trainops.jobspec.deepspeed_config import check_config, stage_ignored_notes
from trainops.jobspec.job_checks import check_job
from trainops.jobspec.problems import Collector, schema_problems

SECURITY_KEYS = {
    "runAsUser": "run_as_user",
    "runAsGroup": "run_as_group",
    "fsGroup": "fs_group",
    "readOnlyRootFilesystem": "read_only_root_filesystem",
}


def _secret_env(raw: dict[str, Any]) -> tuple[model.SecretEnv, ...]:
    return tuple(
        model.SecretEnv(name=k, secret=v["secret"], key=v["key"]) for k, v in sorted(raw.items())
    )


def _env(doc: Document, path: list[str | int]) -> dict[str, str]:
    """An env mapping as strings, each value as the user wrote it: YAML reads `2.10` as the
    float 2.1 and `1e-3` as 0.001, but a variable's value is text."""
    raw: Any = doc.data
    for part in path:
        if isinstance(part, int):
            raw = raw[part] if isinstance(raw, list) and part < len(raw) else {}
        else:
            raw = raw.get(part, {}) if isinstance(raw, dict) else {}
    return {
        k: v if isinstance(v, str) else (doc.scalar_text([*path, k]) or str(v))
        for k, v in sorted(raw.items())
    }


def _quantity(value: Any) -> str | None:
    return None if value is None else str(value)


def build_job(doc: Document, out: Collector, check: bool = True) -> model.TrainingJob | None:
    """The job in `doc`, or None with the problems in `out`. `check=False`: the schema only,
    no checks within the file and no notes, for a spec `--changed` does not reach
    (`trainops.jobspec.checked`)."""
    schema_problems(doc, schemas.JOB, out)
    if out.problems:
        return None
    if check:
        check_job(doc.data, out, Path(doc.file).stem)
    config = (doc.data.get("deepspeed") or {}).get("config")
    notes: list[Problem] = []
    if config is not None:
        config, notes = check_config(config, out)
    size = doc.data.get("model")
    if isinstance(size, dict) and not {"parameters", "config"} & size.keys():
        out.add(["model"], "`model` needs `parameters` (e.g. 13B) or `config` (a config.json)")
    if out.problems:
        return None
    d = schemas.with_defaults(schemas.JOB, doc.data)
    vols = []
    # The volume dataSync fills is the dataset, whatever its name: read-only for training.
    synced = (d.get("dataSync") or {}).get("volume")
    for name, v in sorted(d["volumes"].items()):
        vols.append(
            model.Volume(
                name=name,
                mount_path=v["mountPath"],
                read_only=v.get("readOnly", name in {"dataset", synced}),
                claim_name=v.get("claimName", f"{d['name']}-{name}"),
                create="size" in v,
                size=v.get("size"),
                storage_class=v.get("storageClass"),
                access_mode=v["accessMode"],
            )
        )
    el = d.get("elastic")
    ds = d.get("deepspeed")
    tf, mpi = d["tensorflow"], d["mpi"]
    sync = d.get("dataSync")
    rp, security = d["runPolicy"], d["securityContext"]
    job = model.TrainingJob(
        name=d["name"],
        namespace=d["namespace"],
        file=doc.file,
        framework=d["framework"],
        image=d["image"],
        command=tuple(d.get("command", ())),
        args=tuple(str(a) for a in d["args"]),
        replicas=d["replicas"],
        gpus_per_replica=d["gpusPerReplica"],
        cpu=_quantity(d.get("resources", {}).get("cpu")),
        memory=_quantity(d.get("resources", {}).get("memory")),
        elastic=model.Elastic(el["minReplicas"], el["maxReplicas"], el["maxRestarts"])
        if el
        else None,
        deepspeed=model.DeepSpeed(
            zero_stage=ds["zeroStage"],
            precision=ds["precision"],
            micro_batch_per_gpu=ds.get("microBatchPerGpu"),
            gradient_accumulation=ds.get("gradientAccumulation"),
            config=config,
            config_flag=ds["configFlag"],
        )
        if ds is not None
        else None,
        volumes=tuple(vols),
        data_sync=model.DataSync(
            image=sync["image"],
            command=tuple(sync["command"]),
            volume=sync["volume"],
            env=_env(doc, ["dataSync", "env"]),
            secret_env=_secret_env(sync["secretEnv"]),
        )
        if sync
        else None,
        shared_memory=str(d["sharedMemory"]),
        env=_env(doc, ["env"]),
        secret_env=_secret_env(d["secretEnv"]),
        metrics_port=d["metricsPort"],
        run_policy=model.RunPolicy(
            clean_pod_policy=rp["cleanPodPolicy"],
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
        host_network=d["hostNetwork"],
        termination_grace_seconds=d["terminationGracePeriodSeconds"],
        labels=dict(d["labels"]),
        annotations=dict(d["annotations"]),
        security=model.PodSecurity(**{SECURITY_KEYS[k]: v for k, v in security.items()}),
        tensorflow=_tensorflow(d, tf) if d["framework"] == "tensorflow" else None,
        mpi=_mpi(mpi) if d["framework"] == "mpi" else None,
        pod=model.PodOverrides(
            image_pull_secrets=tuple(d["imagePullSecrets"]),
            service_account_name=d.get("serviceAccountName"),
            priority_class_name=d.get("priorityClassName"),
            affinity=d.get("affinity"),
            labels=dict(d["podLabels"]),
            annotations=dict(d["podAnnotations"]),
            volumes=tuple(d["extraVolumes"]),
            volume_mounts=tuple(d["extraVolumeMounts"]),
            sidecars=tuple(d["sidecars"]),
            template=d.get("podTemplate"),
            by_replica=dict(d["replicaPodTemplates"]),
        ),
        notes=tuple(notes),
        model=model_size.build(d.get("model")),
    )
    if not check:
        return replace(job, notes=())
    later = [*stage_ignored_notes(job.deepspeed_config(), doc), *shared_memory_notes(d, doc)]
    return replace(job, notes=(*job.notes, *later)) if later else job


def _role(raw: dict[str, Any], job: dict[str, Any]) -> model.Role:
    """A role block; its resources default to the job's."""
    resources = raw.get("resources", job.get("resources", {}))
    return model.Role(
        replicas=raw.get("replicas", 1),
        gpus=raw["gpus"],
        cpu=_quantity(resources.get("cpu")),
        memory=_quantity(resources.get("memory")),
    )


def _tensorflow(d: dict[str, Any], tf: dict[str, Any]) -> model.TensorFlow:
    return model.TensorFlow(
        chief=tf["chief"],
        success_policy=tf["successPolicy"],
        parameter_servers=_role(tf["parameterServers"], d) if "parameterServers" in tf else None,
        evaluator=_role(tf["evaluator"], d) if "evaluator" in tf else None,
    )


def _mpi(mpi: dict[str, Any]) -> model.Mpi:
    return model.Mpi(
        api_version=mpi["apiVersion"],
        implementation=mpi["implementation"],
        launcher=_role(mpi["launcher"], {}),
        mpirun_args=tuple(mpi["mpirunArgs"]),
        worker_command=tuple(mpi["workerCommand"]) if "workerCommand" in mpi else None,
        ssh_auth_mount_path=mpi.get("sshAuthMountPath"),
        rank_program=mpi["rankProgram"],
    )
