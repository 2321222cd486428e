"""`ClusterError`: the cluster could not be reached or read (exit 2, one line, no traceback)."""

from __future__ import annotations


class ClusterError(Exception):
    """One line for the user: what failed, where, and what to do.

    Raised for every failure a user meets talking to a cluster (no kubeconfig, unknown
    context, unreachable server, TLS, 401, 403, a CRD or namespace that is not there),
    so the CLI prints `error: <message>` and exits 2 instead of showing a traceback.
    """
