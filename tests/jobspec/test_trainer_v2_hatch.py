"""Issue 29.4: what a job's pod fields and escape hatch ask for that a Kubeflow Trainer v2.3
TrainJob cannot carry is refused when the job is loaded, naming the field (file:line, exit 2,
nothing written), instead of being dropped on the way to the TrainJob. What v2.3 accepts is
its `PodSpecPatch` / `ContainerPatch` (pkg/apis/trainer/v1alpha1/trainjob_types.go at
v2.3.0: serviceAccountName, volumes, init containers and containers the runtime has,
imagePullSecrets, securityContext, nodeSelector, affinity, tolerations, schedulingGates,
terminationGracePeriodSeconds; a container's env, volumeMounts, securityContext) and, for the
node container, `spec.trainer` (image, command, args, env, resourcesPerNode); the jobset
plugin's Validate refuses env on `node` and containers the runtime lacks; the torch plugin
refuses the PET_* env it sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.test_attacks import _refused
from tests.tools import trainops

# resnet50-ddp targets two Training Operator clusters and onprem-h200 (Trainer v2).
JOB = "jobs/resnet50-ddp.yaml"
V2_TARGET = "  - cluster: onprem-h200"

# (what the job appends, the text of the line the error names, what the error says)
CANNOT_CARRY = {
    "priority-class": ("priorityClassName: high\n", "priorityClassName", "cannot set a priority"),
    "sidecars": ("sidecars:\n  - {name: s, image: registry.example/s:1.0}\n", "sidecars:",
                 "cannot add containers"),
    "replica-template": ("replicaPodTemplates:\n  Worker:\n    metadata:\n"
                         "      labels: {a: b}\n", "Worker:", "one pod template for every node"),
    "pod-field": ("podTemplate:\n  spec:\n    enableServiceLinks: false\n",
                  "enableServiceLinks", "cannot carry `podTemplate.spec.enableServiceLinks`"),
    "runtime-class": ("podTemplate:\n  spec:\n    runtimeClassName: nvidia\n",
                  "runtimeClassName", "cannot carry `podTemplate.spec.runtimeClassName`"),
    "init-containers": ("podTemplate:\n  spec:\n    initContainers:\n"
                        "      - {name: i, image: registry.example/i:1.0}\n",
                        "initContainers", "cannot carry `podTemplate.spec.initContainers`"),
    # Pod template metadata past labels and annotations is refused for every kind, at load
    # (tests/security/test_smaller_fences.py), not only where the Trainer cannot carry it.
    "other-container": ("podTemplate:\n  spec:\n    containers:\n"
                        "      - {name: helper, image: registry.example/h:1.0}\n",
                        "name: helper", "cannot add container `helper`"),
    "container-field": ("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
                        "        workingDir: /work\n", "workingDir",
                        "cannot set `workingDir` on the training container"),
    "reserved-env": ("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
                     "        env: [{name: PET_NNODES, value: '9'}]\n", "PET_NNODES",
                     "may not set `PET_NNODES`"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CANNOT_CARRY))
def test_what_a_trainjob_cannot_carry_is_refused_naming_the_field(scratch: Path, case: str) -> None:
    job = scratch / JOB
    text = job.read_text()
    appended, needle, says = CANNOT_CARRY[case]
    job.write_text(text + appended)
    err = _refused(scratch)
    lines = job.read_text().splitlines()
    line = next(i for i, x in enumerate(lines, 1) if i > len(text.splitlines()) and needle in x)
    assert f"{JOB}:{line}:" in err, err
    assert says in err and "`onprem-h200`" in err, err


@pytest.mark.slow
def test_the_same_fields_render_where_no_target_runs_trainer_v2(scratch: Path) -> None:
    """The refusal is the TrainJob's: without the v2 target the job renders (the v1 kinds
    carry every pod field)."""
    job = scratch / JOB
    text = job.read_text()
    assert V2_TARGET in text
    kept = [x for x in text.splitlines(keepends=True) if not x.startswith(V2_TARGET)]
    job.write_text("".join(kept) + CANNOT_CARRY["pod-field"][0])
    result = trainops(scratch, "render")
    assert result.returncode == 0, result.stderr
