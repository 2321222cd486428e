"""Every HTTP answer trainops reads from a cluster, bounded (issue 35.2 and 35.8).

A cluster — its API server, the pods behind the API server's proxy, Prometheus — is not ours
to trust: a compromised rank's metrics endpoint can answer anything `status` and `explain`
read through the pod proxy. So every response goes through `bound`:

- No redirect is followed. requests follows them by default, and pykube-ng adds the
  kubeconfig's bearer token (and client certificate) to every request it sends, the
  redirected one included: a rank answering `302 Location: https://elsewhere/` received the
  user's token. A redirect is refused with the host it pointed at.
- The whole answer, headers and body, arrives within the request timeout: requests' own
  timeout is per socket read, so a body drip-fed a byte at a time outlasted `--request-timeout
  5` by a minute, and the hung job read as Running.
- At most `MAX_RESPONSE_BYTES` are read: a 1.2 GB log body took 5 GB of memory.
- A JSON body nests at most `MAX_DEPTH` levels (the YAML reader's bound): 100,000 levels were
  a RecursionError traceback in the JSON decoder.

Each refusal is a `requests` exception, so the client's error handling turns it into the one
line the CLI prints (`ClusterError`, exit 2).
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from trainops.core.limits import MAX_DEPTH, MAX_REQUEST_BYTES

# The largest answer trainops reads: a list of every pod of a big namespace is a few MiB, a
# log tail of 2,000 lines well under one; 16 API requests' worth is far beyond either.
MAX_RESPONSE_BYTES = 16 * MAX_REQUEST_BYTES
CHUNK = 64 * 1024


class Refused(requests.exceptions.RequestException):
    """An answer trainops does not read: a redirect, too slow, too large, too deeply nested."""


def bound(session: requests.Session, seconds: float) -> requests.Session:
    """`session` with every response read under the bounds above (`seconds` for the whole
    answer); returns it."""
    send = session.send

    def bounded_send(request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        kwargs["allow_redirects"] = False
        kwargs["stream"] = True
        deadline = time.monotonic() + seconds
        response: requests.Response = send(request, **kwargs)
        try:
            if response.is_redirect or 300 <= response.status_code < 400:
                where = urlsplit(response.headers.get("Location", "")).netloc or "elsewhere"
                raise Refused(
                    f"answered {response.status_code} redirecting to {where}: trainops does not"
                    " follow redirects (your credentials would go with it)"
                )
            body = _read(response, deadline, seconds)
        finally:
            response.close()
        _check_depth(body)
        response._content = body  # what `.content`, `.text` and `.json()` read
        response._content_consumed = True
        return response

    session.send = bounded_send  # type: ignore[method-assign]
    return session


def bounded_session(seconds: float) -> requests.Session:
    """A new session under the bounds (a Prometheus reached directly)."""
    return bound(requests.Session(), seconds)


def _read(response: requests.Response, deadline: float, seconds: float) -> bytes:
    raw = response.raw
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            if time.monotonic() > deadline:
                raise Refused(f"did not finish answering within {seconds:g}s (--request-timeout)")
            # requests leaves decoding (gzip) to whoever reads the raw stream.
            chunk = raw.read1(CHUNK, decode_content=True)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise Refused(
                    f"answered more than {MAX_RESPONSE_BYTES:,} bytes; trainops reads no more"
                )
            chunks.append(chunk)
    except urllib3.exceptions.ReadTimeoutError:
        raise requests.exceptions.ReadTimeout(f"no data within {seconds:g}s") from None
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.DecodeError) as err:
        raise requests.exceptions.ConnectionError(str(err)) from None


def _check_depth(body: bytes) -> None:
    """Refuse a JSON body nested deeper than MAX_DEPTH (read without recursion)."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH or body.lstrip()[:1] not in (b"{", b"["):
        return
    try:
        data = json.loads(body)
    except RecursionError:
        raise Refused(f"answered JSON nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        return  # not JSON: the caller reads it as text, or says it is not JSON
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Refused(f"answered JSON nested more than {MAX_DEPTH} levels deep")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
