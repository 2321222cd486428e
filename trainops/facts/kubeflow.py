"""What the Kubeflow Training Operator v1 does to the pods it creates: the env it sets.

Read from the operator's source (v1.9, `kubeflow/trainer` release-1.9):
`pkg/controller.v1/pytorch/envvar.go` (setPodEnv), `master.go` (MasterEnvVarGenerator),
`elastic.go` (ElasticEnvVarGenerator), `pkg/controller.v1/tensorflow/tensorflow.go`
(TF_CONFIG), `pkg/controller.v1/mpi/mpijob_controller.go`; and the MPI Operator v2beta1
`pkg/controller/mpi_job_controller.go`.
https://github.com/kubeflow/trainer/blob/release-1.9/pkg/controller.v1/pytorch/envvar.go
"""

from __future__ import annotations

from typing import Any

# Rendezvous backends torchrun accepts and the operator's elasticPolicy enumerates.
# https://github.com/kubeflow/trainer/blob/release-1.9/pkg/apis/kubeflow.org/v1/pytorch_types.go
RDZV_BACKENDS = frozenset({"c10d", "etcd", "etcd-v2"})

# Set in every PyTorchJob container.
PYTORCH_ALWAYS = frozenset({"PYTHONUNBUFFERED"})
# Set only when the job has a Master replica (MasterEnvVarGenerator + rank/world size).
PYTORCH_WITH_MASTER = frozenset(
    {"MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT", "WORLD_SIZE", "RANK",
     "PET_NODE_RANK"}
)  # fmt: skip
# Set when elasticPolicy is present (always, then depending on the fields set).
PYTORCH_ELASTIC = frozenset({"PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES"})
PYTORCH_ELASTIC_OPTIONAL = {
    "maxRestarts": "PET_MAX_RESTARTS",
    "nProcPerNode": "PET_NPROC_PER_NODE",
    "rdzvId": "PET_RDZV_ID",
    "rdzvConf": "PET_RDZV_CONF",
    "standalone": "PET_STANDALONE",
}
TFJOB = frozenset({"TF_CONFIG"})
# MPI Operator (v1 and v2beta1): hostfile and ssh agent settings for OpenMPI / Intel MPI / MPICH.
MPIJOB = frozenset(
    {"OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_default_hostfile",
     "OMPI_MCA_plm_rsh_args", "OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_set_default_slots",
     "I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP", "I_MPI_HYDRA_BOOTSTRAP_EXEC",
     "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "I_MPI_PERHOST", "HYDRA_HOST_FILE",
     "HYDRA_LAUNCHER_EXTRA_ARGS", "K_MPI_JOB_ROLE", "NVIDIA_VISIBLE_DEVICES",
     "NVIDIA_DRIVER_CAPABILITIES"}
)  # fmt: skip


def operator_env(kind: str, spec: dict[str, Any]) -> frozenset[str] | None:
    """Env the operator sets in every container of a job of this kind and shape.

    None when we do not model the kind's env (the rule then stays silent).
    """
    if kind == "PyTorchJob":
        names = set(PYTORCH_ALWAYS)
        replicas = spec.get("pytorchReplicaSpecs")
        if isinstance(replicas, dict) and "Master" in replicas:
            names |= PYTORCH_WITH_MASTER
        if spec.get("nprocPerNode") is not None:
            names.add("PET_NPROC_PER_NODE")
        elastic = spec.get("elasticPolicy")
        if isinstance(elastic, dict):
            names |= PYTORCH_ELASTIC
            names |= {env for key, env in PYTORCH_ELASTIC_OPTIONAL.items() if key in elastic}
        else:
            names.add("PET_NNODES")
        return frozenset(names)
    if kind == "TFJob":
        return TFJOB
    if kind == "MPIJob":
        return MPIJOB
    return None
