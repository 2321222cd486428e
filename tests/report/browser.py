"""Drive Debian's headless Chromium: load a page, return the DOM after scripts ran, take a
screenshot. No browser download, no Python client: Chromium's own `--dump-dom` and
`--screenshot` flags."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

from tests import processes
from tests.tools import require_chromium

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
"""Screenshots of the browser tests (gitignored `build/`; CI uploads it)."""

FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--allow-file-access-from-files",
    "--virtual-time-budget=20000",  # let promises (mermaid.render) settle before the dump
)


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    # Chromium's renderer, GPU and zygote processes too, on a timeout.
    return processes.run([require_chromium(), *FLAGS, *args], text=True, timeout=120)


def dump_dom(page: Path) -> str:
    proc = _chromium("--dump-dom", page.resolve().as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(page: Path, dest: Path, size: str = "1200,1400") -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    proc = _chromium(f"--screenshot={dest}", f"--window-size={size}", page.resolve().as_uri())
    assert proc.returncode == 0 and dest.is_file(), proc.stderr[-2000:]
    return dest


class Dom(HTMLParser):
    """The serialized DOM as a list of (tag, attributes, text inside up to the next tag)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        """Elements of `tag` whose attributes contain `attrs` (class: one of its classes)."""
        out = []
        for t, a in self.elements:
            if t != tag:
                continue
            ok = True
            for raw, value in attrs.items():
                key = raw.rstrip("_")
                if key == "class":
                    ok = ok and value in a.get("class", "").split()
                else:
                    ok = ok and a.get(key) == value
            if ok:
                out.append(a)
        return out

    @property
    def text(self) -> str:
        return "".join(self.texts)
