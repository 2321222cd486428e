"""Which objects import reads: training job kinds (each imported by one module: a new kind
plugs in here), the objects it reads beside them, and the removed APIs it refuses."""

from __future__ import annotations

from typing import Any, Protocol

from trainops.core.yamlio import Document
from trainops.importer import mpi, pytorch, tensorflow
from trainops.importer.notes import Notes
from trainops.jobspec.model import ClusterProfile


class Importer(Protocol):
    """(object, its document, claims beside it by name, cluster, notes; the Secrets beside it
    by name) -> job spec (no hatch)."""

    def __call__(
        self,
        obj: dict[str, Any],
        doc: Document,
        beside: dict[str, dict[str, Any]],
        cluster: ClusterProfile,
        notes: Notes,
        *,
        secrets: dict[str, dict[str, Any]],
    ) -> dict[str, Any] | None: ...


# (apiVersion, kind) -> the module importing it, and the replica-spec key.
IMPORTERS: dict[tuple[str, str], tuple[Importer, str]] = {
    pytorch.KIND: (pytorch.import_pytorchjob, pytorch.REPLICAS_KEY),
    tensorflow.KIND: (tensorflow.import_tfjob, tensorflow.REPLICAS_KEY),
    **{kind: (mpi.import_mpijob, mpi.REPLICAS_KEY) for kind in mpi.KINDS},
}

# Served by no operator any more, and converted by nothing (`convert.py` rewrites the removed
# APIs that map onto a served one): refused, with what to write instead.
# https://github.com/kubeflow/mpi-operator#installation (v0.3.0+ serves kubeflow.org/v2beta1;
# the Training Operator serves kubeflow.org/v1); TFJob/PyTorchJob v1beta* went in operator 1.0.
REMOVED: dict[tuple[str, str], str] = {
    ("kubeflow.org/v1beta1", "MPIJob"): "kubeflow.org/v2beta1 (MPI Operator) or v1 (Training"
    " Operator)",
    ("kubeflow.org/v1alpha1", "PyTorchJob"): "kubeflow.org/v1",
    ("kubeflow.org/v1alpha1", "TFJob"): "kubeflow.org/v1",
}

# Objects read beside the jobs: claims become created volumes, a metrics Service gives the
# metrics port, a Secret behind an `envFrom` gives the keys it exports; the monitors and other
# ConfigMaps are re-rendered or named in a note.
BESIDE = frozenset(
    {
        ("v1", "ConfigMap"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
    }
)
