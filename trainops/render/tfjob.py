"""A `framework: tensorflow` job as a TFJob (kubeflow.org/v1): Chief and Workers from the job's
`replicas`, parameter servers and an Evaluator as the spec asks, `successPolicy`.

The program runs as written in every replica (no launcher): the Training Operator writes
TF_CONFIG (the cluster of every role and this pod's task) into the `tensorflow` container, so
trainops sets none. Every role gets `restartPolicy: OnFailure`, not the operator's `Never`
default: with MultiWorkerMirroredStrategy a lost peer makes the survivors fail too (a gRPC
error, exit 1), so only restarting every failed role, which then resumes from the Chief's
checkpoint, lets a preempted pod cost minutes instead of the job; parameter servers and the
Evaluator never finish on their own either (the job succeeds with the Chief, or with all
Workers under `AllWorkers`), and a crashed one is needed back. `ExitCode` would fail the job
on the survivors' exit 1.
https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/tensorflow/
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainops.facts.kubeflow import TENSORFLOW_CONTAINER
from trainops.jobspec.model import ClusterProfile, Role, Target, TrainingJob
from trainops.render.common import job_metadata, replica_spec, run_policy, total_pods
from trainops.render.pod import Replica, pod_template, training_replica

API_TFJOB = "kubeflow.org/v1"
RESTART_POLICY = "OnFailure"
# TFJob successPolicy: "" (Chief, or worker 0 without one) or AllWorkers (kubeflow.org/v1).
SUCCESS_POLICIES = {"ChiefOrWorker0": "", "AllWorkers": "AllWorkers"}


def _role_replica(training: Replica, role: Role) -> Replica:
    """A PS or Evaluator pod: the program and data of the training pods, its own size; in the
    NCCL traffic only with GPUs (parameter servers talk gRPC)."""
    nccl = role.gpus > 0
    return replace(
        training, gpus=role.gpus, cpu=role.cpu, memory=role.memory, nccl_device=nccl, nccl_env=nccl
    )


def tfjob(
    job: TrainingJob, cluster: ClusterProfile | None = None, target: Target | None = None
) -> dict[str, Any]:
    assert job.tensorflow is not None
    tf = job.tensorflow
    command = list(job.command) if job.command else None
    training = training_replica(job, TENSORFLOW_CONTAINER, command)
    pods = job.pods_on(target)
    specs: dict[str, Any] = {}
    workers = pods - 1 if tf.chief else pods
    if tf.chief:
        specs["Chief"] = replica_spec(
            1, RESTART_POLICY, pod_template(job, cluster, target, training, "Chief")
        )
    if workers:
        specs["Worker"] = replica_spec(
            workers, RESTART_POLICY, pod_template(job, cluster, target, training, "Worker")
        )
    if tf.parameter_servers is not None:
        ps = _role_replica(training, tf.parameter_servers)
        specs["PS"] = replica_spec(
            tf.parameter_servers.replicas,
            RESTART_POLICY,
            pod_template(job, cluster, target, ps, "PS"),
        )
    if tf.evaluator is not None:
        evaluator = _role_replica(training, tf.evaluator)
        specs["Evaluator"] = replica_spec(
            1, RESTART_POLICY, pod_template(job, cluster, target, evaluator, "Evaluator")
        )
    spec: dict[str, Any] = {
        "runPolicy": run_policy(job, cluster, total_pods(specs)),
        "successPolicy": SUCCESS_POLICIES[tf.success_policy],
        "tfReplicaSpecs": specs,
    }
    return {
        "apiVersion": API_TFJOB,
        "kind": "TFJob",
        "metadata": job_metadata(job, cluster),
        "spec": spec,
    }
