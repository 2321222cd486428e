"""What the batch schedulers read from the objects we render.

Kueue admits a workload by the queue label on the job (https://kueue.sigs.k8s.io/docs/
concepts/local_queue/) and flips `suspend` itself; Volcano schedules pods whose
`schedulerName` is `volcano` as one gang (https://volcano.sh/en/docs/podgroup/).
"""

from __future__ import annotations

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Volcano's queue for a pod or PodGroup (pkg/apis/scheduling: `scheduling.volcano.sh/queue-name`).
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# The keys that name a queue, whichever scheduler reads them.
QUEUE_KEYS = frozenset({KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION})
VOLCANO_SCHEDULER = "volcano"
# kube-scheduler's name: what a pod without `schedulerName` gets (PodSpec API reference).
DEFAULT_SCHEDULER = "default-scheduler"
VOLCANO_JOB_GROUP = "batch.volcano.sh"
# Volcano's Queue and PodGroup kinds.
VOLCANO_SCHEDULING_GROUP = "scheduling.volcano.sh"
