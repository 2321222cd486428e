"""A Kubernetes API emulator on loopback: the cluster-facing commands' tests, and `trainops
sandbox` (try status, explain and live-diff without a cluster; `pip install 'trainops[sandbox]'`).

NO real Kubernetes API server runs here: none can run on the build machines.
What runs is kmock's KubernetesEmulator (PyPI `kmock`), a real aiohttp HTTP server on
127.0.0.1 that speaks the Kubernetes REST API (discovery, list, get, create, patch) and
keeps objects in memory. pykube-ng talks to it over real HTTP, exactly as it talks to a
cluster: nothing in pykube-ng or trainops is patched.

What this module adds to kmock, each where kmock 0.8 differs from a real API server:

- discovery at `/apis/<group>/<version>/` with the trailing slash pykube-ng sends;
- `labelSelector` on lists (equality, `!=`, existence, `in`/`notin`), which kmock ignores;
- `dryRun=All` server-side apply (PATCH `application/apply-patch+yaml`): the object as it
  would be stored (server stamps added) and nothing stored; 404 `namespaces "x" not
  found` when the namespace does not exist, as the real server answers;
- pod logs (`pods/<name>/log` with `container`, `previous`, `tailLines`, `timestamps`) as
  text/plain; a test stores a log with the kubelet's timestamps, served without them
  unless `timestamps=true` is asked, as the kubelet does;
- the pod proxy (`pods/<name>:<port>/proxy/<path>`), serving what a test says the pod
  serves there (a trainer's /metrics), 503 otherwise;
- 404s as the real server's v1 Status (`reason: NotFound`) instead of kmock's own text.

Which kinds exist (discovery) is read from the upstream CRDs in ../shared/upstream where
they are there; core kinds and Kueue's Workload (no CRD file there) are declared here from
the Kubernetes and Kueue API references.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import aiohttp.web
import kmock
import yaml
from kmock._internal import apps, rendering

# (apiVersion, kind) -> (plural, namespaced): the core kinds the commands touch, and the
# CRD kinds without a CRD file in ../shared/upstream. From the API references:
# https://kubernetes.io/docs/reference/kubernetes-api/ and https://kueue.sigs.k8s.io/docs/reference/
DECLARED: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Pod"): ("pods", True),
    ("v1", "Event"): ("events", True),
    ("v1", "Service"): ("services", True),
    ("v1", "ConfigMap"): ("configmaps", True),
    # prometheus-operator v0.93's CRD (no CRD file in ../shared/upstream): the rendered alerts.
    ("monitoring.coreos.com/v1", "PrometheusRule"): ("prometheusrules", True),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): ("networkpolicies", True),
    ("kueue.x-k8s.io/v1beta1", "Workload"): ("workloads", True),
    # Platform manifests (clusters/<name>/manifests/) delivered beside the jobs.
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"): ("network-attachment-definitions", True),
}
# CRD files (under ../shared/upstream/crds) whose kinds a full training cluster serves.
CRD_FILES = (
    "kubeflow.org/pytorchjobs.yaml",
    "kubeflow.org/tfjobs.yaml",
    "kubeflow.org/mpijobs.yaml",
    "kubeflow.org/mpijobs-v2beta1.yaml",
    "trainer.kubeflow.org/trainjobs.yaml",
    "trainer.kubeflow.org/trainingruntimes.yaml",
    "trainer.kubeflow.org/clustertrainingruntimes.yaml",
    "scheduling.volcano.sh/podgroups.yaml",
    "scheduling.volcano.sh/queues.yaml",
    "kueue.x-k8s.io/clusterqueues.yaml",
    "kueue.x-k8s.io/localqueues.yaml",
    "kueue.x-k8s.io/resourceflavors.yaml",
    "monitoring.coreos.com/servicemonitors.yaml",
)
# The same kinds as CRD_FILES serve, written out for a checkout without ../shared (the
# GitHub-hosted workflow); test_emulator.py checks they equal what the CRD files say.
CRD_KINDS: dict[tuple[str, str], tuple[str, bool]] = {
    ("kubeflow.org/v1", "PyTorchJob"): ("pytorchjobs", True),
    ("kubeflow.org/v1", "TFJob"): ("tfjobs", True),
    ("kubeflow.org/v1", "MPIJob"): ("mpijobs", True),
    ("kubeflow.org/v2beta1", "MPIJob"): ("mpijobs", True),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): ("trainjobs", True),
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"): ("trainingruntimes", True),
    ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime"): ("clustertrainingruntimes", False),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): ("podgroups", True),
    ("scheduling.volcano.sh/v1beta1", "Queue"): ("queues", False),
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): ("clusterqueues", False),
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): ("localqueues", True),
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): ("clusterqueues", False),
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): ("localqueues", True),
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): ("resourceflavors", False),
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): ("resourceflavors", False),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("servicemonitors", True),
}
VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
SERVER_TIME = "2026-11-23T09:00:00Z"
# What a real API server answers for a path it does not serve (a group without a CRD).
NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}


def kinds_from_crds(upstream: Path) -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) -> (plural, namespaced) for every served version of the CRDs."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    for rel in CRD_FILES:
        # The C loader: the upstream CRD files are megabytes of schema (10 s in pure Python).
        text = (upstream / "crds" / rel).read_text(encoding="utf-8")
        for crd in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            spec = crd["spec"]
            for version in spec["versions"]:
                if version.get("served", True):
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    found[key] = (spec["names"]["plural"], spec["scope"] == "Namespaced")
    return found


def _resource(api_version: str, plural: str) -> kmock.resource:
    group, _, version = api_version.rpartition("/")
    return kmock.resource(group, version, plural)


_TERM = re.compile(
    r"^\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w./-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$"
)


def reply(status: int, payload: Any, content_type: str = "application/json") -> rendering.Response:
    """A response with this status (kmock keeps the last status a reaction set: always give one).

    JSON goes out as `Content-Type: application/json` exactly, as kube-apiserver sends it
    (aiohttp would add `; charset=utf-8`, which sends pykube-ng down another error path).
    """
    return rendering.Response(
        status=status, payload=payload, headers={"Content-Type": content_type}
    )


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    """Kubernetes label selector semantics for the forms kubectl and pykube-ng send."""
    for term in re.split(r",(?![^(]*\))", selector):
        if not term.strip():
            continue
        match = _TERM.match(term)
        if match is None:
            raise ValueError(f"unparsable label selector term {term!r}")
        negate, key, op, value, set_op, values = match.groups()
        if op in {"=", "=="}:
            ok = labels.get(key) == value
        elif op == "!=":
            ok = labels.get(key) != value
        elif set_op:
            options = {v.strip() for v in values.split(",")}
            ok = (labels.get(key) in options) == (set_op == "in")
            if set_op == "notin":
                ok = key not in labels or labels[key] not in options
        else:
            ok = (key in labels) != bool(negate)
        if not ok:
            return False
    return True


# The kubelet's log timestamp: RFC 3339 with nanoseconds and one space, at a line's start.
_KUBELET_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


class ApiEmulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock's emulator with the behaviours listed in the module docstring."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.kinds: dict[tuple[str, str], tuple[str, bool]] = {}
        self.logs: dict[tuple[str, str, str, bool], str] = {}
        # Above kmock's own fallbacks (which would serve these as plain lists / fetches),
        # below anything a test declares.
        early = self.fallback**1
        early["get", re.compile(r"/apis/[^/]+/[^/]+/")] << self._serve_version
        early["get", re.compile(r"/api/v1/")] << self._serve_version
        # kmock reads /api/v1/namespaces/NAME as "namespace NAME", not as the object.
        early["get", re.compile(r"/api/v1/namespaces/[^/]+")] << self._serve_namespace
        early[kmock.params(dryRun="All")] << self._serve_dry_run
        early[kmock.subresource("log")] << self._serve_log
        self.proxied: dict[tuple[str, str, str], str] = {}
        early["get", re.compile(r"/api/v1/namespaces/[^/]+/pods/[^/]+/proxy/.*")] << (
            self._serve_pod_proxy
        )
        # /version and SelfSubjectAccessReviews (`trainops doctor`): what a test sets.
        self.server_version: dict[str, str] = {"major": "1", "minor": "31", "gitVersion": "v1.31.4"}
        self.grants: dict[str, list[dict[str, Any]]] = {}
        self.impersonators: set[str] = set()
        early["get", re.compile(r"/version/?$")] << self._serve_server_version
        early["post", re.compile(r"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")] << (
            self._serve_access_review
        )

    def declare(self, api_version: str, kind: str, plural: str, namespaced: bool) -> None:
        self.kinds[(api_version, kind)] = (plural, namespaced)
        self.resources[_resource(api_version, plural)] = kmock.ResourceInfo(
            kind=kind, namespaced=namespaced, verbs=VERBS
        )

    def add(self, obj: dict[str, Any]) -> None:
        """Store `obj` as the cluster would hold it."""
        plural, namespaced = self.kinds[(obj["apiVersion"], obj["kind"])]
        meta = obj["metadata"]
        ns = meta.get("namespace") if namespaced else None
        self.objects[_resource(obj["apiVersion"], plural), ns, meta["name"]] = copy.deepcopy(obj)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.params.get("dryRun") == "All" or request.url.path.endswith("accessreviews"):
            # Nothing is stored on a dry run or an access review: skip kmock's bookkeeping.
            return await apps.RawHandler._handle(self, request)
        response: aiohttp.web.StreamResponse = await super()._handle(request)
        return response

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesNotFoundError):
            body = json.dumps(NOT_FOUND).encode()
            headers = {"Content-Type": "application/json"}
            return aiohttp.web.Response(body=body, status=404, headers=headers)
        response: aiohttp.web.StreamResponse = await super()._render_error(exc)
        return response

    async def _serve_list(self, request: rendering.Request) -> Any:
        listing: Any = await super()._serve_list(request)
        selector = request.params.get("labelSelector")
        if selector:
            listing["items"] = [
                item
                for item in listing["items"]
                if selector_matches(selector, (item.get("metadata") or {}).get("labels") or {})
            ]
        listing["items"].sort(
            key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        )
        return listing

    def _namespace_exists(self, name: str) -> bool:
        return (kmock.resource("", "v1", "namespaces"), None, name) in self.objects

    async def _serve_namespace(self, request: rendering.Request) -> Any:
        name = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        key = (kmock.resource("", "v1", "namespaces"), None, name)
        if key in self.objects and not self.objects[key].deleted:
            return reply(200, self.objects[key].raw)
        status = {
            **NOT_FOUND,
            "message": f'namespaces "{name}" not found',
            "details": {"name": name, "kind": "namespaces"},
        }
        return reply(404, status)

    async def _serve_dry_run(self, request: rendering.Request) -> Any:
        obj = copy.deepcopy(request.data or {})
        ns = request.namespace
        if ns is not None and not self._namespace_exists(ns):
            status = {
                **NOT_FOUND,
                "message": f'namespaces "{ns}" not found',
                "details": {"name": ns, "kind": "namespaces"},
            }
            return reply(404, status)
        key: Any = (request.resource, ns, request.name)
        existing = key in self.objects and not self.objects[key].deleted
        stored = copy.deepcopy(self.objects[key].raw) if existing else {}
        meta = {**(stored.get("metadata") or {}), **obj.get("metadata", {})}
        meta.setdefault("uid", "6f1e9c1e-0000-4000-8000-000000000001")
        meta.setdefault("creationTimestamp", SERVER_TIME)
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = "1"
        meta["managedFields"] = [
            {
                "manager": request.params.get("fieldManager", ""),
                "operation": "Apply",
                "apiVersion": obj.get("apiVersion", ""),
                "time": SERVER_TIME,
                "fieldsType": "FieldsV1",
                "fieldsV1": {},
            }
        ]
        result = {**stored, **obj, "metadata": meta}
        return reply(200 if existing else 201, result)

    async def _serve_log(self, request: rendering.Request) -> rendering.Response:
        container = request.params.get("container", "")
        previous = request.params.get("previous") == "true"
        key = (request.namespace or "", request.name or "", container, previous)
        if key not in self.logs:
            status = {
                **NOT_FOUND,
                "code": 400,
                "reason": "BadRequest",
                "message": f'previous terminated container "{container}" in pod'
                f' "{request.name}" not found',
            }
            return reply(400, status)
        lines = self.logs[key].splitlines(keepends=True)
        if request.params.get("timestamps") != "true":
            # A test's log may carry the kubelet's timestamps (as the kubelet stores them);
            # the kubelet strips them unless `timestamps=true` is asked.
            lines = [_KUBELET_STAMP.sub("", line) for line in lines]
        tail = int(request.params.get("tailLines", len(lines)))
        return reply(200, "".join(lines[-tail:]).encode(), "text/plain; charset=utf-8")

    async def _serve_server_version(self, request: rendering.Request) -> rendering.Response:
        return reply(200, {**self.server_version, "platform": "linux/amd64"})

    async def _serve_access_review(self, request: rendering.Request) -> rendering.Response:
        """A SelfSubjectAccessReview answered from `grants` (user -> RBAC PolicyRules, each
        with the `namespaces` it is bound in, [] for a ClusterRoleBinding), as the user the
        `Impersonate-User` header names; impersonating needs the kubeconfig's user to be in
        `impersonators`, else 403 as RBAC answers it."""
        user = request.headers.get("Impersonate-User")
        if user is not None and "alice" not in self.impersonators:
            status = {
                **NOT_FOUND,
                "code": 403,
                "reason": "Forbidden",
                "message": f'users "{user}" is forbidden: User "alice" cannot impersonate'
                ' resource "users" in API group "" at the cluster scope',
            }
            return reply(403, status)
        review = copy.deepcopy(request.data or {})
        attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
        allowed = any(_grants(rule, attrs) for rule in self.grants.get(user or "alice", []))
        review["status"] = {"allowed": allowed, **({"reason": "RBAC: allowed"} if allowed else {})}
        return reply(201, review)

    async def _serve_pod_proxy(self, request: rendering.Request) -> rendering.Response:
        """GET pods/<name>:<port>/proxy/<path>: what the pod serves there, as the API server
        relays it; 503 when nothing answers, as the real server says it."""
        parts = request.url.path.split("/")
        ns, target, path = parts[4], parts[6], "/".join(parts[8:])
        key = (ns, target, path)
        if key not in self.proxied:
            status = {
                **NOT_FOUND,
                "code": 503,
                "reason": "ServiceUnavailable",
                "message": f"error trying to reach service: dial tcp {target}: connect:"
                " connection refused",
            }
            return reply(503, status)
        body = self.proxied[key].encode()
        return reply(200, body, "text/plain; version=0.0.4; charset=utf-8")


def _grants(rule: dict[str, Any], attrs: dict[str, str]) -> bool:
    """Whether one RBAC PolicyRule (bound in `namespaces`, [] cluster-wide) allows `attrs`."""
    namespaces = rule.get("namespaces", [])
    return (
        (not namespaces or attrs.get("namespace", "") in namespaces)
        and attrs.get("group", "") in rule["apiGroups"]
        and any(r in ("*", attrs.get("resource")) for r in rule["resources"])
        and any(v in ("*", attrs.get("verb")) for v in rule["verbs"])
    )
