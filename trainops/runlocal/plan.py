"""Turn a built PyTorchJob into local processes: one per replica, as the operator would start pods.

`make_plan` is everything run-local decides before a process starts, and it starts none: it
scales the job down (`adapt.scale`), computes the operator's env for the scaled job
(`operator_env`), resolves the container's env like the kubelet (`kube`), materialises volumes
in a work directory (`volumes`), and adapts paths, service names, ports and the program to this
machine (`adapt`). Every change it makes is listed in `Plan.changes`, so the user knows what the
local run does not prove.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError, Problem
from trainops.facts.kubeflow import default_clean_pod_policy, elastic_range
from trainops.kube.words import expand_kubelet
from trainops.runlocal import kube, op_cache, program
from trainops.runlocal.adapt import (
    LOCAL_HOST,
    apply_arg_edits,
    free_port,
    host_rewriter,
    local_command,
    renumber_arg,
    scale,
    trainer_root,
)
from trainops.runlocal.operator_env import (
    Replica,
    container,
    operator_env,
    pytorch_port,
    replica_specs,
    replicas,
    restart_policy,
)
from trainops.runlocal.options import Options
from trainops.runlocal.source import BuiltJob
from trainops.runlocal.volumes import Volumes

DEFAULT_LOCAL_REPLICAS = 2
"""Two pods are the smallest job that still rendezvous across pods."""
MAX_GRACE_SECONDS = 30
"""Local cap on terminationGracePeriodSeconds: a small local run checkpoints in seconds."""
DEFAULT_GRACE_SECONDS = 30
"""Kubernetes' default terminationGracePeriodSeconds."""
# Variables a caller's shell may carry (a run-local inside torchrun, a CI job) that would leak
# into the replicas and change what torchrun does; a pod starts without them.
_INHERITED_LAUNCHER_VARS = re.compile(
    r"^(PET_.*|TORCHELASTIC_.*|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|"
    r"GROUP_WORLD_SIZE|ROLE_RANK|ROLE_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|CUDA_VISIBLE_DEVICES)$"
)


DEFAULT_LOCAL_BACKOFF_LIMIT = 3
"""Without runPolicy.backoffLimit the operator restarts a failing pod forever (the kubelet's
CrashLoopBackOff); locally the run stops after this many restarts instead."""


@dataclass
class Launch:
    """One local replica: the process run-local starts (again, when its policy restarts it)."""

    replica: Replica
    argv: list[str]
    env: dict[str, str]
    """The whole process env."""
    pod_env: list[tuple[str, str]]
    """The container's env then the operator's, as the pod would see them (localised)."""
    cwd: Path
    restart_policy: str
    grace_seconds: float
    ports: dict[str, int] = field(default_factory=dict)
    """The container's named ports -> the local port standing for each (`metrics` -> 40123)."""

    @property
    def name(self) -> str:
        return self.replica.name


@dataclass
class Plan:
    job: str
    cluster: str
    shape: str
    """`Master+Worker` or `elastic MIN-MAX`, of the local run."""
    launches: list[Launch]
    changes: list[str]
    """What differs from the pods on the cluster, one line each."""
    warnings: list[str]
    """References run-local could not resolve and containers it does not run."""
    notes: list[str]
    """How the program is found (our trainer from the checkout, or PATH)."""
    success: str
    """`master`, `any-worker` (elastic) or `all-workers`: when the operator calls it Succeeded."""
    backoff_limit: int | None
    clean_pod_policy: str
    workdir: Path
    kind: str = "PyTorchJob"
    """The built job's kind."""
    ranks: int | None = None
    """An MPIJob's ranks (all started by its one Launcher); None: from the replicas' env."""

    @property
    def world_size(self) -> int:
        if self.ranks is not None:
            return self.ranks
        return sum(_procs(launch.pod_env) for launch in self.launches)

    @property
    def procs_per_replica(self) -> int:
        if self.ranks is not None:
            return self.ranks
        return max(_procs(launch.pod_env) for launch in self.launches)


def _procs(env: list[tuple[str, str]]) -> int:
    value = dict(env).get("PET_NPROC_PER_NODE", "1")
    return int(value) if value.isdigit() else 1


@dataclass
class _Planner:
    """The state shared by every replica's launch while one plan is made."""

    built: BuiltJob
    options: Options
    workdir: Path
    scaled: dict[str, Any]
    """The job at the local size: what the operator env is computed from."""
    port: int
    """The free local port standing for the pytorchjob-port (master and rendezvous)."""
    host: Callable[[str], str]
    """Service names of the job's pods -> 127.0.0.1."""
    threads: int
    """OMP_NUM_THREADS ceiling: this machine's cores shared by every local process."""
    changes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    """Volumes, init containers and ports already reported (each is reported once)."""

    @property
    def volumes(self) -> Volumes:
        """The pod volumes' local directories (reported once per run, like every change)."""
        return Volumes(
            self.built, self.options, self.workdir, self.changes, self.warnings, self.seen
        )

    def warn(self, line: str) -> None:
        if line not in self.warnings:
            self.warnings.append(line)

    def change(self, key: str, line: str) -> None:
        """Report `line` once per run, however many replicas it applies to."""
        if key not in self.seen:
            self.seen.add(key)
            self.changes.append(line)

    @property
    def rdzv_on_worker0(self) -> bool:
        elastic = self.scaled["spec"].get("elasticPolicy")
        return elastic is not None and not elastic.get("rdzvHost")

    def _pod_env(
        self, pod: Replica, c: dict[str, Any], fields: dict[str, str]
    ) -> list[tuple[str, str]]:
        """The container's env, then the operator's, with hosts and the port made local."""
        resolved = kube.resolve_env(c, self.built.config_maps, self.built.secrets, fields)
        for line in resolved.unresolved:
            self.warn(line)
        env: list[tuple[str, str]] = [(k, self.host(v)) for k, v in resolved.values.items()]
        for key, value in operator_env(self.scaled, pod):
            if key in {"MASTER_PORT", "PET_MASTER_PORT"}:
                env.append((key, str(self.port)))
            elif key == "PET_RDZV_ENDPOINT" and self.rdzv_on_worker0:
                env.append((key, f"{LOCAL_HOST}:{self.port}"))
            else:
                env.append((key, self.host(value)))
        if self.rdzv_on_worker0:
            conf = dict(env).get("PET_RDZV_CONF")
            is_host = f"is_host={1 if pod == Replica('Worker', 0) else 0}"
            env.append(("PET_RDZV_CONF", f"{conf},{is_host}" if conf else is_host))
        cap = dict(env).get("OMP_NUM_THREADS", "")
        if cap.isdigit() and int(cap) > self.threads:
            self.change(
                "omp",
                f"OMP_NUM_THREADS {cap} -> {self.threads} ({os.cpu_count()} cores for"
                f" {self.threads_for} processes)",
            )
            env = [(k, str(self.threads) if k == "OMP_NUM_THREADS" else v) for k, v in env]
        return env

    @property
    def threads_for(self) -> int:
        return len(replicas(self.scaled)) * self.options.procs_per_replica

    def launch(self, pod: Replica, first: bool) -> Launch:
        template = replica_specs(self.scaled)[pod.type]["template"]
        c = container(template)
        for init in template["spec"].get("initContainers", []):
            self.warn(
                f"init container {init.get('name')} ({init.get('image')}) is not run:"
                " provide what it prepares with --volume"
            )
        pod_dir = self.workdir / "pods" / pod.name
        pod_dir.mkdir(parents=True, exist_ok=True)
        paths = self.volumes.mounts(template, pod_dir)
        fields = {
            "metadata.name": pod.pod_name(self.built.name),
            "metadata.namespace": str(self.scaled["metadata"].get("namespace", "default")),
            "status.podIP": LOCAL_HOST,
            "status.hostIP": LOCAL_HOST,
            "spec.nodeName": socket.gethostname(),
            "spec.serviceAccountName": str(template["spec"].get("serviceAccountName", "default")),
        }
        pod_env = self._pod_env(pod, c, fields)
        # The kubelet expands $(VAR) with the pod's values; the paths are made local after.
        missing: list[str] = []
        env_map = dict(pod_env)
        command = [expand_kubelet(str(a), env_map, missing) for a in c.get("command", [])]
        args = [expand_kubelet(str(a), env_map, missing) for a in c.get("args", [])]
        for var in missing:
            self.warn(
                f"$({var}) in the command or args is defined by nothing: Kubernetes passes"
                " it verbatim"
            )
        # Ports are per pod on the cluster; here every replica shares one network.
        renumber = {str(p["containerPort"]): str(free_port()) for p in c.get("ports", [])}
        if renumber:
            named = ", ".join(f"{p.get('name', '?')}:{p['containerPort']}" for p in c["ports"])
            self.change(
                "ports",
                f"container ports {named} -> a free port per replica (in env values and args"
                " naming them)",
            )
        pod_env = [(k, renumber.get(v) or paths(self.host(v))) for k, v in pod_env]
        args = [renumber_arg(paths(self.host(a)), renumber) for a in args]
        command = [paths(self.host(a)) for a in command]
        image = str(c.get("image", ""))
        notes = self.notes if first else []
        written = [str(a) for a in (*c.get("command", []), *c.get("args", []))]
        ours = program.admit(
            image, written, self.built.source, self.options.allow_any_program, notes
        )
        apply_arg_edits(args, self.options, ours, self.changes if first else [])
        argv = local_command(command, image, self.built.source, notes, ours)
        # Another program sees none of this machine's variables but the few it needs.
        inherited = os.environ if ours else program.clean_env()
        proc_env = {k: v for k, v in inherited.items() if not _INHERITED_LAUNCHER_VARS.match(k)}
        proc_env.update(pod_env)
        proc_env["CUDA_VISIBLE_DEVICES"] = ""
        proc_env["DS_ACCELERATOR"] = "cpu"
        # The pod's /tmp is its own emptyDir, gone with the pod: here its local directory,
        # where tempfile and torchrun's log folders go (not this machine's /tmp, for ever).
        local_tmp = paths("/tmp")
        if local_tmp != "/tmp" and "TMPDIR" not in dict(pod_env):
            proc_env["TMPDIR"] = local_tmp
        proc_env[op_cache.ENV] = str(self.options.op_cache or op_cache.default_dir())
        if ours:
            proc_env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(trainer_root()), os.environ.get("PYTHONPATH", "")) if p
            )
        grace = float(template["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
        return Launch(
            replica=pod,
            argv=argv + args,
            env=proc_env,
            pod_env=pod_env,
            cwd=pod_dir,
            restart_policy=restart_policy(self.scaled, pod.type),
            grace_seconds=min(grace, MAX_GRACE_SECONDS),
            ports={
                str(p["name"]): int(renumber[str(p["containerPort"])])
                for p in c.get("ports", [])
                if p.get("name")
            },
        )


def backoff_limit(job: dict[str, Any], options: Options, changes: list[str]) -> int:
    limit = job["spec"].get("runPolicy", {}).get("backoffLimit")
    if options.backoff_limit is not None:
        return options.backoff_limit
    if limit is None:
        changes.append(
            "runPolicy.backoffLimit: unset (the operator restarts failing pods without end)"
            f" -> {DEFAULT_LOCAL_BACKOFF_LIMIT} locally (--backoff-limit)"
        )
        return DEFAULT_LOCAL_BACKOFF_LIMIT
    return int(limit)


def make_plan(built: BuiltJob, options: Options, workdir: Path) -> Plan:
    """Everything about the local run, decided; no process started. Files go under `workdir`."""
    job = built.job
    changes: list[str] = []
    pods = replicas(job)
    local = options.replicas or min(len(pods), DEFAULT_LOCAL_REPLICAS)
    if local < 1 or options.procs_per_replica < 1:
        raise InputError(Problem.about("--replicas", "replicas and procs must be >= 1"))
    scaled = scale(job, local, options.procs_per_replica, changes)
    elastic = scaled["spec"].get("elasticPolicy")
    if elastic is not None and options.max_restarts is not None:
        changes.append(
            f"elasticPolicy.maxRestarts {elastic.get('maxRestarts')} -> {options.max_restarts}"
            " (--max-restarts)"
        )
        elastic["maxRestarts"] = options.max_restarts
    port = free_port()
    job_ports = sorted({pytorch_port(job, r) for r in replica_specs(job)})
    changes.append(
        f"service names {built.name}-<type>-<i> -> {LOCAL_HOST}; pytorchjob-port"
        f" {', '.join(map(str, job_ports))} -> free port {port}"
    )
    planner = _Planner(
        built=built,
        options=options,
        workdir=workdir,
        scaled=scaled,
        port=port,
        host=host_rewriter([p.pod_name(built.name) for p in pods]),
        threads=max(1, (os.cpu_count() or 1) // (local * options.procs_per_replica)),
        changes=changes,
    )
    if planner.rdzv_on_worker0:
        changes.append(
            "PET_RDZV_CONF += is_host=1 on worker-0, is_host=0 on the others: in a pod only"
            " worker-0's host name matches the endpoint, here 127.0.0.1 matches every replica"
        )
    changes.append("CUDA_VISIBLE_DEVICES='' and DS_ACCELERATOR=cpu in every replica (no GPU)")
    changes.append(
        f"{op_cache.ENV}={options.op_cache or op_cache.default_dir()} in every replica: DeepSpeed"
        " builds its ops once there and every later run reuses them (--op-cache)"
    )
    backoff = backoff_limit(job, options, changes)
    launches = [planner.launch(pod, i == 0) for i, pod in enumerate(replicas(scaled))]
    specs, span = replica_specs(scaled), elastic_range(scaled["spec"])
    if "Master" in specs:
        success, shape = "master", "+".join(t for t in ("Master", "Worker") if t in specs)
    elif span is not None:
        success, shape = "any-worker", f"elastic {span[0]}-{span[1]}"
    else:
        success, shape = "all-workers", "Worker"
    return Plan(
        job=built.name,
        cluster=built.cluster,
        shape=shape,
        launches=launches,
        changes=planner.changes,
        warnings=planner.warnings,
        notes=[*built.notes, *planner.notes],
        success=success,
        backoff_limit=backoff,
        clean_pod_policy=str(
            job["spec"].get("runPolicy", {}).get("cleanPodPolicy")
            or default_clean_pod_policy(str(job.get("apiVersion", "")))
        ),
        workdir=workdir,
    )
