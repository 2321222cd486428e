"""`trainops validate` (without `--server-side`) does not import the cluster client: pykube and
requests are a tenth of a second of every run, a tenth of a one-job PR's check and of the
`--manifests` benchmark counting start-up (issue 39). Checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

from tests.tools import REPO

CODE = """
import io, contextlib, sys
from trainops.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in {"pykube", "requests"}
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
