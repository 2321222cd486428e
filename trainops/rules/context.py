"""What a check may look up besides its object: the whole manifest set (ConfigMaps,
Services, claims, for cross-object rules) through indexes built once, and the cluster profile.

How one object reads is `trainops.kube.objects` (pod templates) and `trainops.kube.pods`
(containers); `Context` only finds things.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from trainops.core.values import as_dict
from trainops.jobspec.model import ClusterProfile
from trainops.kube.lazy import lazy
from trainops.kube.objects import Object
from trainops.kube.pods import PodTemplate
from trainops.kube.trainjob import is_runtime_for, runtime_ref


def same_namespace(a: str | None, b: str | None) -> bool:
    """Two objects share a namespace (an unset one is whatever the apply targets)."""
    return a is None or b is None or a == b


T = TypeVar("T")


class LabelIndex(Generic[T]):
    """Items with their labels, indexed by (key, value) label pairs.

    A selector lookup then starts from the items carrying its rarest required label
    instead of scanning every item: rules that resolve selectors per object (a
    Service's pods, a ServiceMonitor's Services) stay linear on large repositories.
    """

    def __init__(self, entries: Iterable[tuple[T, dict[str, str]]]) -> None:
        self.entries = list(entries)
        self._positions: dict[tuple[str, str], list[int]] = {}
        for i, (_, labels) in enumerate(self.entries):
            for pair in labels.items():
                self._positions.setdefault(pair, []).append(i)

    def candidates(self, required: dict[str, str]) -> list[tuple[T, dict[str, str]]]:
        """Entries, in order, that may carry all `required` labels (a superset: check them)."""
        if not required:
            return self.entries
        rarest = min((self._positions.get(pair, []) for pair in required.items()), key=len)
        return [self.entries[i] for i in rarest]


@dataclass
class Context:
    """The manifest set and the cluster: what a check may look up besides its object.

    Lookups go through indexes built on first use (the manifest set does not change
    while rules run), so a check that looks something up for every object stays linear.
    """

    objects: list[Object]
    cluster: ClusterProfile | None = None
    rule_slugs: frozenset[str] = frozenset()
    """Every rule the engine knows (a waiver must name one)."""

    def __post_init__(self) -> None:
        """Give each TrainJob its runtime, so its pods are the Trainer's merge of both."""
        for obj in self.objects:
            if obj.is_trainjob and obj.runtime is None:
                ref = runtime_ref(obj.data)
                candidates = self._by_kind_name.get((ref[0], ref[1]), [])
                obj.runtime = next((o for o in candidates if is_runtime_for(ref, o.data)), None)

    @lazy
    def _by_kind(self) -> dict[str, list[Object]]:
        index: dict[str, list[Object]] = {}
        for obj in self.objects:
            index.setdefault(obj.kind, []).append(obj)
        return index

    @lazy
    def _by_kind_name(self) -> dict[tuple[str, str], list[Object]]:
        index: dict[tuple[str, str], list[Object]] = {}
        for obj in self.objects:
            index.setdefault((obj.kind, obj.name), []).append(obj)
        return index

    @lazy
    def labelled_pods(self) -> LabelIndex[tuple[Object, PodTemplate]]:
        """Every pod template of every object with the labels its pods carry, in object order."""
        return LabelIndex(((obj, pod), pod.labels) for obj in self.objects for pod in obj.pods)

    @lazy
    def labelled_services(self) -> LabelIndex[Object]:
        """Core Services with their own (metadata) labels, in object order."""
        return LabelIndex(
            (svc, {str(k): str(v) for k, v in as_dict(svc.manifest.metadata.get("labels")).items()})
            for svc in self.of_kind("Service", "")
        )

    @lazy
    def _jobs_by_name(self) -> dict[str, list[Object]]:
        index: dict[str, list[Object]] = {}
        for obj in self.objects:
            if obj.is_kubeflow_job:
                index.setdefault(obj.name, []).append(obj)
        return index

    def find_job(self, name: str, namespace: str | None) -> Object | None:
        """The Kubeflow job of that name in that namespace (any kind)."""
        for obj in self._jobs_by_name.get(name, []):
            if same_namespace(obj.namespace, namespace):
                return obj
        return None

    def of_kind(self, kind: str, group: str | None = None) -> Iterator[Object]:
        for obj in self._by_kind.get(kind, []):
            if group is None or obj.group == group:
                yield obj

    def find(self, kind: str, name: str, namespace: str | None) -> Object | None:
        for obj in self._by_kind_name.get((kind, name), []):
            if same_namespace(obj.namespace, namespace):
                return obj
        return None
