"""The platform objects a cluster may carry in Git beside its jobs
(`clusters/<name>/manifests/`), and whether each kind is namespaced: the AppProject allows
namespaced kinds per destination namespace and cluster-scoped kinds cluster-wide.

Scopes from each project's CRD (`spec.scope`) or the Kubernetes API reference:
Volcano Queue (cluster), Kueue ResourceFlavor and ClusterQueue (cluster), LocalQueue
(namespaced), Multus NetworkAttachmentDefinition (namespaced), PriorityClass (cluster).
https://github.com/volcano-sh/volcano/blob/master/config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml
https://kueue.sigs.k8s.io/docs/concepts/
https://github.com/k8snetworkplumbingwg/multus-cni/blob/master/deployments/multus-daemonset.yml
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/priority-class-v1/
"""

from __future__ import annotations

from trainops.facts.schedulers import VOLCANO_SCHEDULING_GROUP

KUEUE_GROUP = "kueue.x-k8s.io"
MULTUS_GROUP = "k8s.cni.cncf.io"

# (API group, kind) -> namespaced?
PLATFORM_KINDS: dict[tuple[str, str], bool] = {
    (VOLCANO_SCHEDULING_GROUP, "Queue"): False,
    (KUEUE_GROUP, "ResourceFlavor"): False,
    (KUEUE_GROUP, "ClusterQueue"): False,
    (KUEUE_GROUP, "LocalQueue"): True,
    (MULTUS_GROUP, "NetworkAttachmentDefinition"): True,
    ("scheduling.k8s.io", "PriorityClass"): False,
}
