"""What Volcano v1.15.1 (github.com/volcano-sh/volcano) does to a PodGroup an operator creates,
before its scheduler reads the queue: ported small, with its own unit test as vectors
(tests/conformance/test_volcano.py).

- `config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml`: `spec.queue` defaults to
  `default` (an operator that leaves it unset gets `default`);
- `pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go` createPodGroupPatch (on
  create): a PodGroup whose queue is `default` (unset or written so) is moved to the queue its
  namespace names in the `scheduling.volcano.sh/queue-name` annotation, if it has one; any
  other queue is left alone.
"""

from __future__ import annotations

DEFAULT_QUEUE = "default"  # schedulingv1beta1.DefaultQueue
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # schedulingv1beta1.QueueNameAnnotationKey


def create_patch(
    queue: str | None, namespace_annotations: dict[str, str] | None
) -> list[dict[str, str]] | None:
    """createPodGroupPatch's JSON patch for a PodGroup created with `queue` (None: unset) in a
    namespace with these annotations (None: the namespace cannot be read, which the webhook
    ignores); None: no patch."""
    if (queue or DEFAULT_QUEUE) != DEFAULT_QUEUE or namespace_annotations is None:
        return None
    if QUEUE_ANNOTATION not in namespace_annotations:
        return None
    return [{"op": "add", "path": "/spec/queue", "value": namespace_annotations[QUEUE_ANNOTATION]}]


def admitted_queue(queue: str | None, namespace_annotations: dict[str, str] | None) -> str:
    """The queue the PodGroup lands in: the patch's, else its own (the CRD's default)."""
    patch = create_patch(queue, namespace_annotations)
    return patch[0]["value"] if patch else (queue or DEFAULT_QUEUE)
