"""The core and SIG workload controllers that own training pods besides the Kubeflow operator:
the labels and DNS names batch/v1 Jobs and JobSets give their pods, and the accelerators that
are not GPUs (a pod that asks for one runs training without `nvidia.com/gpu`).
"""

from __future__ import annotations

import re

# The Job controller labels its pods with the Job's name (both keys since Kubernetes 1.27).
# https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-labels
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
# An Indexed Job's pods get the hostname `<job>-<index>`; with `subdomain` naming a headless
# Service they resolve as `<job>-<index>.<subdomain>`.
# https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode
INDEXED = "Indexed"

# JobSet (jobset.x-k8s.io): replicatedJobs[].template is a batch/v1 JobTemplateSpec. Its pods
# are `<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`, the subdomain defaulting
# to the JobSet's name (a headless Service JobSet creates, unless enableDNSHostnames: false).
# https://github.com/kubernetes-sigs/jobset/blob/main/api/jobset/v1alpha2/jobset_types.go
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"

# LeaderWorkerSet (leaderworkerset.x-k8s.io): `replicas` groups of `size` pods, a leader and
# `size - 1` workers, each pod labelled with the set's name and given the env below by the
# LWS webhook (`api/leaderworkerset/v1/leaderworkerset_types.go`, `pkg/utils/pod`).
# https://lws.sigs.k8s.io/docs/reference/leaderworkerset.v1/
LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_ENV = frozenset({"LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"})

# KubeRay (ray.io): a RayCluster's head pod and worker groups (`replicas` x `numOfHosts` pods
# each), which a RayJob embeds as `rayClusterSpec` beside its submitter pod; the operator
# labels a cluster's pods with its name (`ray-operator/controllers/ray/utils/constant.go`).
# https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/config.html
RAY_GROUP = "ray.io"
RAY_CLUSTER_LABEL = "ray.io/cluster"

# Accelerators other than GPUs, by device plugin resource name: Intel Gaudi, AWS Trainium and
# Inferentia (Neuron), Google TPUs.
# https://docs.habana.ai/en/latest/Orchestration/Gaudi_Kubernetes/Device_Plugin_for_Kubernetes.html
# https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/kubernetes-getting-started.html
# https://cloud.google.com/kubernetes-engine/docs/concepts/tpus
OTHER_ACCELERATOR = re.compile(r"^(habana\.ai/|aws\.amazon\.com/neuron|google\.com/tpu)")
