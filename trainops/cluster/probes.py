"""Two reads `trainops doctor` makes that the other commands do not: the API server's version
and what another user may do (a SelfSubjectAccessReview asked as that user)."""

from __future__ import annotations

import json
from typing import Any

from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError


def server_version(client: Client) -> dict[str, Any]:
    """GET /version: the API server's `gitVersion`, `major`, `minor`."""
    response = client.send(
        "get", "version", None, lambda: client.api.get(version="", base="/version")
    )
    if not response.ok:
        raise client.http_error(response, "get", "/version", None)
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ClusterError(f"{client.where} answered /version with what is not JSON")
    return body


def can_i(client: Client, user: str, attributes: dict[str, str]) -> bool:
    """Whether `user` may do what `attributes` says (a SelfSubjectAccessReview's
    `resourceAttributes`: verb, group, resource, namespace), asked as `user` through
    impersonation, as `kubectl auth can-i --as USER` does. Impersonating needs RBAC
    `impersonate` on users (or service accounts): a 403 is a ClusterError."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    response = client.send(
        "create",
        "selfsubjectaccessreviews.authorization.k8s.io",
        None,
        lambda: client.api.post(
            version="authorization.k8s.io/v1",
            url="selfsubjectaccessreviews",
            data=json.dumps(review),
            headers={"Impersonate-User": user, "Content-Type": "application/json"},
        ),
    )
    if not response.ok:
        raise client.http_error(
            response, f"impersonate {user} and create", "selfsubjectaccessreviews", None
        )
    try:
        body = response.json()
    except ValueError:
        body = {}
    status = body.get("status") if isinstance(body, dict) else None
    return bool((status or {}).get("allowed"))
