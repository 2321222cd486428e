"""Scripts that never finish or hide failure, read as a POSIX shell runs them.

POSIX (XCU 2.9.2 Pipelines): a pipeline's exit status is its last command's unless
`pipefail` is set; (2.9.3 Lists) `a || b` runs b only when a fails and takes b's status;
`set -e` ends the script at a failing simple command outside a list's left side. The job's
status is the container's exit code (Kubeflow's `ExitCode` restart policy, batch/v1 Job's
backoffLimit)."""

from __future__ import annotations

import pytest

from tests.rules.helpers import manifests_from_text, run

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: demo, namespace: ml-train}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.example/train:1.0
          resources: {{limits: {{nvidia.com/gpu: 1, cpu: "1", memory: 1Gi}}}}
          command: {argv}
"""


def _rules(argv: str) -> set[str]:
    found = run(manifests_from_text(JOB.format(argv=argv)))
    return {f.rule for f in found} & {
        "command-never-exits",
        "failure-ignored",
        "pipe-hides-failure",
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ('[bash, -c, "python train.py; sleep infinity"]', {"command-never-exits"}),
        ('[sh, -c, "./train.sh\\ntail -f /dev/null"]', {"command-never-exits"}),
        ('[sh, -c, "accelerate launch train.py || exit 0"]', {"failure-ignored"}),
        ('[sh, -c, "python train.py || :"]', {"failure-ignored"}),
        ('[sh, -c, "python train.py\\nexit 0"]', {"failure-ignored"}),
        ('[bash, -c, "torchrun train.py 2>&1 | tee log"]', {"pipe-hides-failure"}),
        # not hidden: errexit ends the script before `exit 0`
        ('[bash, -ec, "python train.py; exit 0"]', set()),
        ('[bash, -c, "set -e\\npython train.py\\nexit 0"]', set()),
        # pipefail, by option or by `set`, or the status read back
        ('[bash, -o, pipefail, -c, "python train.py | tee log"]', set()),
        ('[bash, -c, "python train.py | tee log; exit ${PIPESTATUS[0]}"]', set()),
        # `2>&1` is a redirection, not a background `&`
        ('[bash, -c, "python train.py 2>&1 > log"]', set()),
        # housekeeping, a sleep before training, no script at all
        ('[sh, -c, "pip install x || true; python train.py"]', set()),
        ('[sh, -c, "sleep 5; python train.py"]', set()),
        ("[python, train.py]", set()),
    ],
)
def test_scripts(argv: str, expected: set[str]) -> None:
    assert _rules(argv) == expected


def test_an_mpi_workers_sshd_is_not_training() -> None:
    """An MPI Worker's command runs until the Launcher ends it: no training before it."""
    assert _rules('[sh, -c, "mkdir -p /run/sshd; /usr/sbin/sshd -De; sleep infinity"]') == set()
