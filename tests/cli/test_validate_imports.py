"""`trainops validate` (without `--server-side`) does not import the cluster client (pykube and
requests), and `--manifests` not the Python JSON Schema library (jsonschema, which words a
spec's problems, and kubernetes-validate, whose package imports it): each was a tenth of a
second or more of every run, a tenth of a one-job PR's check and a sixth of the `--manifests`
benchmark counting start-up (issue 39). Checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

from tests.tools import REPO

CODE = """
import io, contextlib, sys
from trainops.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = {"pykube", "requests", "jsonschema", "kubernetes_validate"}
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in heavy
                      or m.startswith("trainops.cluster."))))
"""


def test_validate_loads_no_cluster_client() -> None:
    manifest = REPO / "base" / "resnet50-ddp" / "service.yaml"
    done = subprocess.run(
        [sys.executable, "-c", CODE, "validate", "--manifests", str(manifest), "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert not loaded - {"trainops.cluster.errors"}, loaded
