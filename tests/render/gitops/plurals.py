"""The API resource names (plurals) of the kinds trainops delivers, as the Kubernetes API
reference and each CRD's `spec.names.plural` spell them: what RBAC rules name."""

PLURALS = {
    "ConfigMap": "configmaps",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Service": "services",
    "PyTorchJob": "pytorchjobs",
    "TFJob": "tfjobs",
    "MPIJob": "mpijobs",
    "NetworkAttachmentDefinition": "network-attachment-definitions",
    "LocalQueue": "localqueues",
    "ServiceMonitor": "servicemonitors",
    "NetworkPolicy": "networkpolicies",
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
    "Queue": "queues",
    "ClusterQueue": "clusterqueues",
    "ResourceFlavor": "resourceflavors",
    "PriorityClass": "priorityclasses",
    "PrometheusRule": "prometheusrules",
    "PodMonitor": "podmonitors",
    "ExternalSecret": "externalsecrets",
    "ResourceQuota": "resourcequotas",
    "LimitRange": "limitranges",
}
