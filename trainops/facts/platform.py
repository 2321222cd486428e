"""The platform objects a cluster may carry in Git beside its jobs
(`clusters/<name>/manifests/`), and whether each kind is namespaced: the AppProject allows
namespaced kinds per destination namespace and cluster-scoped kinds cluster-wide.

Scopes from each project's CRD (`spec.scope`) or the Kubernetes API reference:
Volcano Queue (cluster), Kueue ResourceFlavor and ClusterQueue (cluster), LocalQueue
(namespaced), Multus NetworkAttachmentDefinition (namespaced), PriorityClass (cluster);
what goes with watching and running training (all namespaced): prometheus-operator's
PrometheusRule and PodMonitor, Grafana dashboards as ConfigMaps (only those labelled for the
dashboard sidecar: a platform ConfigMap is a dashboard, nothing else) or as the Grafana
Operator's GrafanaDashboard (grafana-operator v5, namespaced), External Secrets'
ExternalSecret (the reference to a secret in a store: no Secret is ever in Git), ResourceQuota
and LimitRange.
https://github.com/prometheus-operator/prometheus-operator/blob/v0.93.0/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml
https://external-secrets.io/latest/api/externalsecret/
https://github.com/volcano-sh/volcano/blob/master/config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml
https://kueue.sigs.k8s.io/docs/concepts/
https://github.com/k8snetworkplumbingwg/multus-cni/blob/master/deployments/multus-daemonset.yml
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/priority-class-v1/
"""

from __future__ import annotations

from trainops.facts.monitoring import (
    GRAFANA_DASHBOARD_KIND,
    GRAFANA_DASHBOARD_LABEL,
    GRAFANA_DASHBOARD_LABEL_VALUE,
    GRAFANA_OPERATOR_API,
)
from trainops.facts.schedulers import VOLCANO_SCHEDULING_GROUP

KUEUE_GROUP = "kueue.x-k8s.io"
MULTUS_GROUP = "k8s.cni.cncf.io"
MONITORING_GROUP = "monitoring.coreos.com"
EXTERNAL_SECRETS_GROUP = "external-secrets.io"
GRAFANA_GROUP = GRAFANA_OPERATOR_API.split("/")[0]

# (API group, kind) -> namespaced?
PLATFORM_KINDS: dict[tuple[str, str], bool] = {
    (VOLCANO_SCHEDULING_GROUP, "Queue"): False,
    (KUEUE_GROUP, "ResourceFlavor"): False,
    (KUEUE_GROUP, "ClusterQueue"): False,
    (KUEUE_GROUP, "LocalQueue"): True,
    (MULTUS_GROUP, "NetworkAttachmentDefinition"): True,
    ("scheduling.k8s.io", "PriorityClass"): False,
    (MONITORING_GROUP, "PrometheusRule"): True,
    (MONITORING_GROUP, "PodMonitor"): True,
    ("", "ConfigMap"): True,
    (GRAFANA_GROUP, GRAFANA_DASHBOARD_KIND): True,
    (EXTERNAL_SECRETS_GROUP, "ExternalSecret"): True,
    ("", "ResourceQuota"): True,
    ("", "LimitRange"): True,
}

# (API group, kind) -> the labels an object of that kind must carry to be a platform object:
# a ConfigMap is delivered only as a Grafana dashboard (kube-prometheus-stack's sidecar label).
REQUIRED_LABELS: dict[tuple[str, str], dict[str, str]] = {
    ("", "ConfigMap"): {GRAFANA_DASHBOARD_LABEL: GRAFANA_DASHBOARD_LABEL_VALUE},
}
