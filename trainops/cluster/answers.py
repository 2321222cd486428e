"""What a failed answer from the cluster says, on one line: the v1 Status's message, a proxy's
HTML error page as its status line, the innermost reason of a connection error."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import requests

# An HTML page instead of a v1 Status, and its title (else its first heading).
_HTML = re.compile(r"<(?:!doctype html|html)\b", re.IGNORECASE)
_HTML_TITLE = re.compile(r"<(?:title|h1)[^>]*>(.*?)</(?:title|h1)>", re.IGNORECASE | re.DOTALL)


def status_message(response: requests.Response) -> str:
    """The message of the v1 Status in an error response; a proxy's or load balancer's HTML
    error page (nginx, a cloud's gateway, an auth proxy in front of the API server) as its
    status line, `502 Bad Gateway`; else the first line of the text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    if _HTML.search(response.text[:2048]):
        found = _HTML_TITLE.search(response.text)
        title = " ".join(unescape(found.group(1)).split()) if found else ""
        what = title or f"{response.status_code} {response.reason or ''}".strip()
        return f"{what} (an HTML error page: a proxy or load balancer answered, not the API server)"
    text = response.text.strip().splitlines()
    return text[0] if text else response.reason or f"HTTP {response.status_code}"


def status_body(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    return {"kind": "Status", "code": response.status_code, "message": status_message(response)}


def reason_of(err: Exception) -> str:
    """The innermost useful reason of a requests/urllib3 error, on one line."""
    text = str(err)
    for marker in ("Caused by ", "] "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    return text.strip(" ()'\"").splitlines()[0] if text.strip() else type(err).__name__
