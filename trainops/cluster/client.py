"""A thin client over pykube-ng: the few calls trainops makes, each failure as one clear line.

pykube-ng does the HTTP (kubeconfig auth, TLS, discovery, list with label selectors,
get, logs, PATCH); this module only chooses the calls and turns what can go wrong
into a `ClusterError` that names the server, the context and what to do: a server
that does not answer (with the timeout used), TLS failures, 401, 403 with the verb
and resource, a CRD that is not installed.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pykube
import requests

from trainops.cluster import DEFAULT_TIMEOUT_SECONDS, kinds
from trainops.cluster.answers import reason_of, status_body, status_message
from trainops.cluster.bounded import Refused, bound
from trainops.cluster.errors import ClusterError
from trainops.cluster.kubeconfig import Target

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "Client"]
# Server-side apply: the field manager our dry runs apply as, so field ownership on the
# cluster reads `trainops` (https://kubernetes.io/docs/reference/using-api/server-side-apply/).
FIELD_MANAGER = "trainops"
APPLY_PATCH = "application/apply-patch+yaml"
# RBAC's denial message, e.g. `pods is forbidden: User "alice" cannot list resource "pods"
# in API group "" in the namespace "ml-vision"`; other 403s (quota, admission webhooks,
# Pod Security) are about the object, not about who asks.
_RBAC_DENIAL = re.compile(r'cannot (\w+) resource "([^"]*)"')


@dataclass(frozen=True)
class Resource:
    """A served kind: where its objects live on the API server."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    cls: Any
    """The pykube-ng APIObject class (made by pykube.object_factory from discovery)."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def qualified(self) -> str:
        """`pytorchjobs.kubeflow.org`, `pods`: how RBAC and kubectl name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass(frozen=True)
class ApplyResult:
    """What the API server answered to one dry-run apply."""

    code: int
    body: dict[str, Any]
    """The object as it would be stored (2xx), or the v1 Status explaining the refusal."""

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300


class Client:
    """The cluster behind one kubeconfig context."""

    def __init__(self, target: Target, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.target = target
        self.timeout = timeout
        self.api = pykube.HTTPClient(target.config, timeout=timeout)
        # No redirect followed with the kubeconfig's credentials; every answer bounded in
        # time, size and nesting (cluster/bounded.py).
        bound(self.api.session, timeout)
        self._resources: dict[tuple[str, str], Resource | None] = {}

    @property
    def where(self) -> str:
        return f"{self.target.server} (context {self.target.context})"

    @contextlib.contextmanager
    def _calling(self, verb: str, what: str, namespace: str | None = None) -> Iterator[None]:
        """Turn transport and HTTP failures of one call into a ClusterError."""
        try:
            yield
        except requests.exceptions.SSLError as err:
            raise ClusterError(
                f"TLS failure talking to {self.where}: {reason_of(err)}; check the cluster's"
                " certificate-authority in the kubeconfig"
            ) from None
        except Refused as err:
            raise ClusterError(f"{verb} {what} on {self.where}: the answer {err}") from None
        except requests.exceptions.Timeout:
            raise ClusterError(
                f"the API server {self.where} did not answer within {self.timeout:g}s"
                " (--request-timeout); check that the cluster is up and reachable from here"
            ) from None
        except requests.exceptions.ConnectionError as err:
            raise ClusterError(
                f"cannot connect to the API server {self.where}: {reason_of(err)}"
            ) from None
        except requests.HTTPError as err:
            if err.response is None:
                raise ClusterError(f"{verb} {what} on {self.where} failed: {err}") from None
            raise self.http_error(err.response, verb, what, namespace) from None
        except pykube.exceptions.HTTPError as err:
            # pykube-ng's own error for a response whose body is a v1 Status (a real API
            # server's `Content-Type: application/json`): the same message as above.
            raise self.failure(err.code, str(err), verb, what, namespace) from None
        except pykube.PyKubeError as err:
            raise ClusterError(f"{verb} {what} on {self.where}: {err}") from None
        except requests.exceptions.RequestException as err:
            raise ClusterError(f"{verb} {what} on {self.where} failed: {reason_of(err)}") from None
        except (NotImplementedError, OSError, subprocess.CalledProcessError) as err:
            # pykube-ng's exec credential plugins: an unsupported apiVersion, a missing binary.
            raise ClusterError(
                f"credentials of user {self.target.user!r} (context {self.target.context}):"
                f" {err or type(err).__name__}"
            ) from None

    def http_error(
        self, response: requests.Response, verb: str, what: str, namespace: str | None
    ) -> ClusterError:
        """The one line for an HTTP error that stops the command (401, 403, 5xx, ...)."""
        return self.failure(response.status_code, status_message(response), verb, what, namespace)

    def failure(
        self, code: int, message: str, verb: str, what: str, namespace: str | None
    ) -> ClusterError:
        """The one line for HTTP status `code` with the server's `message`."""
        where_ns = f" in namespace {namespace}" if namespace else ""
        if code == 401:
            return ClusterError(
                f"401 Unauthorized from {self.where}: the credentials of user"
                f" {self.target.user!r} were rejected; log in again or renew the token"
                f" in the kubeconfig ({message})"
            )
        if code == 403:
            return ClusterError(
                f"403 Forbidden: not allowed to {verb} {what}{where_ns} on {self.where};"
                f" ask for RBAC that grants it ({message})"
            )
        return ClusterError(f"{code} from {self.where} on {verb} {what}{where_ns}: {message}")

    # ------------------------------------------------------------------ discovery

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """The served resource of `kind`, or None when the cluster does not serve it
        (its CRD is not installed, or not at this version)."""
        key = (api_version, kind)
        if key not in self._resources:
            self._resources[key] = self._discover(api_version, kind)
        return self._resources[key]

    def _discover(self, api_version: str, kind: str) -> Resource | None:
        # GET /apis/<group>/<version> (/api/v1 for the core group): the APIResourceList.
        response = self.send(
            "discover", api_version, None, lambda: self.api.get(version=api_version)
        )
        if response.status_code == 404:
            return None
        if response.status_code == 403:
            # Discovery is open to every authenticated user by default (system:discovery);
            # a cluster that closes it cannot be read by kubectl either.
            raise self.http_error(response, "get", f"the API discovery of {api_version}", None)
        if not response.ok:
            raise self.http_error(response, "discover", api_version, None)
        try:
            listing = response.json()
        except ValueError:
            raise ClusterError(
                f"{self.where} answered the discovery of {api_version} with what is not JSON"
            ) from None
        for entry in listing.get("resources") or []:
            name = str(entry.get("name", ""))
            if entry.get("kind") == kind and "/" not in name:
                namespaced = bool(entry.get("namespaced"))
                base = (
                    pykube.objects.NamespacedAPIObject if namespaced else pykube.objects.APIObject
                )
                cls = type(kind, (base,), {"version": api_version, "endpoint": name, "kind": kind})
                return Resource(api_version, kind, name, namespaced, cls)
        return None

    def require(self, api_version: str, kind: str) -> Resource:
        """Like `resource`, but a kind the cluster lacks is an error naming the CRD."""
        found = self.resource(api_version, kind)
        if found is None:
            raise ClusterError(self.not_served(api_version, kind))
        return found

    def not_served(self, api_version: str, kind: str) -> str:
        """Why a kind cannot be read: its CRD (at this version) is not installed."""
        return (
            f"{self.where} does not serve {kind} ({api_version}): its CRD is not installed;"
            f" install {kinds.provider(api_version)}"
        )

    # ------------------------------------------------------------------ reads

    def list(
        self, resource: Resource, namespace: str | None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Objects of `resource` in `namespace` (None: a cluster-scoped kind, or a namespaced
        one in every namespace), filtered by a label selector."""
        what = resource.qualified
        scope = pykube.all if namespace is None and resource.namespaced else namespace
        with self._calling("list", what, namespace):
            query = resource.cls.objects(self.api, namespace=scope)
            if selector:
                query = query.filter(selector=selector)
            return [item.obj for item in query.iterator()]

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One object, or None when it does not exist."""
        with self._calling("get", resource.qualified, namespace):
            found = resource.cls.objects(self.api, namespace=namespace).get_or_none(name=name)
        return None if found is None else dict(found.obj)

    def namespace_exists(self, name: str) -> bool | None:
        """Whether the namespace exists; None when we may not ask (namespaced RBAC only)."""
        response = self.send(
            "get", "namespaces", None, lambda: self.api.get(url=f"namespaces/{name}")
        )
        if response.status_code == 403:
            return None
        if response.status_code == 404:
            return False
        if not response.ok:
            raise self.http_error(response, "get", "namespaces", None)
        return True

    def logs(
        self,
        namespace: str,
        pod: str,
        container: str,
        previous: bool,
        tail_lines: int,
        *,
        timestamps: bool = False,
    ) -> str | None:
        """The last lines of a container's log (of its previous run if `previous`), each
        line prefixed with the kubelet's RFC 3339 time if `timestamps`; None when the kubelet
        has none to give (the container never started, the node is gone)."""
        obj = {"metadata": {"name": pod, "namespace": namespace}}
        with self._calling("get", "pods/log", namespace):
            try:
                text: str = pykube.Pod(self.api, obj).logs(
                    container=container,
                    previous=previous,
                    tail_lines=tail_lines,
                    timestamps=timestamps,
                )
            except requests.HTTPError as err:
                # 400 "container ... is waiting to start", 404 for a gone pod: no log to show.
                if err.response is not None and err.response.status_code in {400, 404}:
                    return None
                raise
        return text

    def pod_proxy(self, namespace: str, pod: str, port: int, path: str) -> str | None:
        """GET `path` on the pod's `port` through the API server's pod proxy (RBAC
        `pods/proxy`); None when nothing answers there (502/503) or the pod is gone."""
        url = f"namespaces/{namespace}/pods/{pod}:{port}/proxy/{path}"
        response = self.send("get", "pods/proxy", namespace, lambda: self.api.get(url=url))
        if response.status_code in {404, 502, 503}:
            return None
        if not response.ok:
            raise self.http_error(response, "get", "pods/proxy", namespace)
        return response.text

    def proxy_get(self, path: str, params: dict[str, str]) -> requests.Response:
        """GET `path` under the API server (`/api/v1/namespaces/NS/services/NAME:PORT/proxy/...`,
        the service proxy) with the kubeconfig's credentials; the caller reads the status."""
        if not path.startswith("/api/v1/"):
            raise ClusterError(f"not an API server path: {path}")
        return self.send(
            "get",
            "services/proxy",
            None,
            lambda: self.api.get(url=path.removeprefix("/api/v1/"), params=params),
        )

    # ------------------------------------------------------------------ writes (dry run)

    def apply_dry_run(self, resource: Resource, obj: dict[str, Any]) -> ApplyResult:
        """Server-side apply of `obj` with `dryRun=All`: admission, quota, CEL, defaulting,
        and nothing stored. A 401 or an RBAC 403 stops the run (ClusterError); any other
        refusal is the answer about this object."""
        instance = resource.cls(self.api, obj)
        params = {"fieldManager": FIELD_MANAGER, "dryRun": "All", "force": "true"}
        kwargs = instance.api_kwargs(
            params=params, headers={"Content-Type": APPLY_PATCH}, data=json.dumps(obj)
        )
        namespace = (obj.get("metadata") or {}).get("namespace")
        response = self.send(
            "patch", resource.qualified, namespace, lambda: self.api.patch(**kwargs)
        )
        if response.status_code == 401 or (
            response.status_code == 403 and _RBAC_DENIAL.search(status_message(response))
        ):
            raise self.http_error(response, "patch", resource.qualified, namespace)
        return ApplyResult(response.status_code, status_body(response))

    # ------------------------------------------------------------------ writes

    def create(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """POST `obj` (`kubectl create`); the object as stored. One that exists already is a
        ClusterError naming it (409 AlreadyExists), as is every refusal."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        instance = resource.cls(self.api, obj)
        kwargs = instance.api_kwargs(data=json.dumps(obj), obj_list=True)
        response = self.send(
            "create", resource.qualified, namespace, lambda: self.api.post(**kwargs)
        )
        if response.status_code == 409:
            name = obj["metadata"]["name"]
            raise ClusterError(
                f"{resource.kind} {namespace}/{name} already exists on {self.where}: left by"
                f" an earlier run or someone else's; delete it (`kubectl delete"
                f" {resource.qualified} -n {namespace} {name}`) and run again"
            )
        if not response.ok:
            raise self.http_error(response, "create", resource.qualified, namespace)
        return status_body(response)

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        """DELETE one object with background propagation (its pods and Jobs are collected by
        their owner references, as `kubectl delete` does); gone already is fine."""
        obj = {"metadata": {"name": name, "namespace": namespace}}
        kwargs = resource.cls(self.api, obj).api_kwargs(
            data=json.dumps({"propagationPolicy": "Background"})
        )
        response = self.send(
            "delete", resource.qualified, namespace, lambda: self.api.delete(**kwargs)
        )
        if not response.ok and response.status_code != 404:
            raise self.http_error(response, "delete", resource.qualified, namespace)

    def send(
        self,
        verb: str,
        what: str,
        namespace: str | None,
        call: Callable[[], requests.Response],
    ) -> requests.Response:
        """`call()` (one pykube-ng request) with its failures as ClusterError; a 401 stops
        here, every other status is the caller's to read."""
        with self._calling(verb, what, namespace):
            response: requests.Response = call()
        if response.status_code == 401:
            raise self.http_error(response, verb, what, namespace)
        return response
