"""Flux's custom health checks (fluxcd/pkg `runtime/cel` at runtime/v0.110.1, used by
kustomize-controller v1.9.4) over our Kustomizations, through the port in flux_port.py.

The port first passes fluxcd/pkg's own unit tests for it, translated into vectors (the test
names below are upstream's, in `runtime/cel/status_reader_test.go` and
`status_evaluator_test.go` at runtime/v0.110.1; `TestStatusReader_ReadStatus` and
`TestStatusReader_CustomResourceLifeCycle` need a test API server and are not translated, their
in-memory twin `TestStatusReader_ReadStatusForObject` is). Then every rendered Kustomization's
`healthCheckExprs` must build a status reader (issue 33 item 1: two MPIJob entries were a
terminal error, and no Flux cluster applied its jobs) that reads every job it applies.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import flux_port
from tests.conformance.flux_port import CURRENT, FAILED, IN_PROGRESS, UNKNOWN, CELError
from tests.conformance.gitops_repos import labels_delivered_by, rendered
from tests.tools import require_kustomize, require_module

require_module("celpy")

DATA = {"current": True, "inProgress": True, "failed": True}


def _reader(*checks: dict[str, str]) -> flux_port.StatusReader:
    return flux_port.StatusReader.new(list(checks))


# TestStatusReader_Supports: (supported group, kind), asked (group, kind), result.
SUPPORTS = [
    pytest.param(("test", "Test"), ("test", "Test"), True, id="supported"),
    pytest.param(("test", "Test"), ("test", "Unsupported"), False, id="unsupported"),
    pytest.param(("test", ""), ("test", "AnyKind"), True, id="group-only-any-kind"),
    pytest.param(("test", ""), ("other", "AnyKind"), False, id="group-only-other-group"),
    pytest.param(("test", ""), ("test", ""), True, id="group-only-empty-kind"),
]


@pytest.mark.parametrize(("supported", "asked", "result"), SUPPORTS)
def test_status_reader_supports(
    supported: tuple[str, str], asked: tuple[str, str], result: bool
) -> None:
    reader = _reader(
        {"apiVersion": f"{supported[0]}/v1", "kind": supported[1], "current": "something"}
    )
    assert reader.supports(*asked) is result


# TestStatusReader_ReadStatusForObject
@pytest.mark.parametrize(
    ("exprs", "status"),
    [
        pytest.param({"current": "data.current"}, CURRENT, id="current"),
        pytest.param(
            {"inProgress": "data.inProgress", "current": "data.current"},
            IN_PROGRESS,
            id="in-progress",
        ),
        pytest.param({"failed": "data.failed", "current": "data.current"}, FAILED, id="failed"),
    ],
)
def test_status_reader_read_status_for_object(exprs: dict[str, str], status: str) -> None:
    reader = _reader({"apiVersion": "v1", "kind": "ConfigMap", **exprs})
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "data": DATA}
    assert reader.read_status_for_object(obj) == status


def test_status_reader_read_status_for_object_group_only_health_check() -> None:
    reader = _reader({"apiVersion": "bitnami.com/v1alpha1", "current": "data.current"})
    for kind in ("SealedSecret", "AnotherKind"):
        obj = {"apiVersion": "bitnami.com/v1alpha1", "kind": kind, "data": {"current": True}}
        assert reader.read_status_for_object(obj) == CURRENT
    other = {"apiVersion": "other.com/v1", "kind": "Foo", "data": {"current": True}}
    with pytest.raises(CELError, match=r"the GroupKind Foo\.other\.com is not supported"):
        reader.read_status_for_object(other)


def test_status_reader_read_status_for_object_specific_kind_overrides_group_only() -> None:
    reader = _reader(
        {"apiVersion": "bitnami.com/v1alpha1", "failed": "true", "current": "false"},
        {"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "current": "true"},
    )
    sealed = {"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret"}
    other = {"apiVersion": "bitnami.com/v1alpha1", "kind": "OtherKind"}
    assert reader.read_status_for_object(sealed) == CURRENT
    assert reader.read_status_for_object(other) == FAILED


@pytest.mark.parametrize(
    "checks",
    [
        pytest.param([{"apiVersion": "v1", "kind": "ConfigMap"}] * 2, id="DuplicateGroupKindError"),
        pytest.param([{"apiVersion": "bitnami.com/v1alpha1"}] * 2, id="DuplicateGroupOnlyError"),
        # Ours (issue 33 item 1): the version is not part of the key.
        pytest.param(
            [
                {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob"},
                {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"},
            ],
            id="same-kind-two-versions",
        ),
    ],
)
def test_new_status_reader_duplicate_error(checks: list[dict[str, str]]) -> None:
    with pytest.raises(CELError, match=r"duplicate custom health check for GroupKind .*\[1\]"):
        _reader(*({**c, "current": "true"} for c in checks))


def test_new_status_reader_cel_compile_error() -> None:
    with pytest.raises(CELError, match=r"failed to create custom status evaluator for healthc"):
        _reader({"apiVersion": "v1", "kind": "ConfigMap", "current": "something."})


# TestNewStatusEvaluator: expressions, the error (None: none).
NEW_EVALUATOR = [
    pytest.param(
        {"current": "data.current", "inProgress": "data.inProgress", "failed": "data.failed"},
        None,
        id="all expressions are present",
    ),
    pytest.param({"current": "data.current"}, None, id="InProgress and Failed are optional"),
    pytest.param({}, "expression Current not specified", id="Current is required"),
    pytest.param(
        {"current": "data."}, "failed to parse the expression Current", id="Current invalid"
    ),
    pytest.param(
        {"current": "data.current", "inProgress": "data."},
        "failed to parse the expression InProgress",
        id="InProgress invalid",
    ),
    pytest.param(
        {"current": "data.current", "failed": "data."},
        "failed to parse the expression Failed",
        id="Failed invalid",
    ),
]


@pytest.mark.parametrize(("exprs", "error"), NEW_EVALUATOR)
def test_new_status_evaluator(exprs: dict[str, str], error: str | None) -> None:
    if error is None:
        assert flux_port.StatusEvaluator.new(exprs) is not None
    else:
        with pytest.raises(CELError, match=error):
            flux_port.StatusEvaluator.new(exprs)


ALL3 = {"current": "data.current", "inProgress": "data.inProgress", "failed": "data.failed"}
GEN_CHECK = "has(status.observedGeneration) && metadata.generation != status.observedGeneration"
READY_FAILED = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
READY_CURRENT = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"
READY = {"failed": READY_FAILED, "current": READY_CURRENT}
GENERATIONS = {"metadata": {"generation": 2}, "status": {"observedGeneration": 1}}


def _data(current: bool, in_progress: bool, failed: bool) -> dict[str, Any]:
    return {"data": {"current": current, "inProgress": in_progress, "failed": failed}}


# TestStatusEvaluator_Evaluate: expressions, object, status or the error upstream asserts
# (cel-go's words; the port's are a prefix of them where cel-go names the whole attribute).
EVALUATE = [
    pytest.param({"current": "true"}, GENERATIONS, IN_PROGRESS, id="generation differs"),
    pytest.param(
        {**ALL3, "current": "data.currentt"},
        _data(True, False, False),
        "failed to evaluate the CEL expression 'data.currentt': no such key: currentt",
        id="Current error",
    ),
    pytest.param(
        {**ALL3, "inProgress": "data.inProgresss"},
        _data(True, False, False),
        "failed to evaluate the CEL expression 'data.inProgresss': no such key: inProgresss",
        id="InProgress error",
    ),
    pytest.param(
        {**ALL3, "failed": "data.failedd"},
        _data(True, False, False),
        "failed to evaluate the CEL expression 'data.failedd': no such key: failedd",
        id="Failed error",
    ),
    pytest.param(ALL3, _data(False, False, False), IN_PROGRESS, id="all false"),
    pytest.param(ALL3, _data(True, True, True), IN_PROGRESS, id="all true"),
    pytest.param(ALL3, _data(True, False, True), FAILED, id="current and failed"),
    pytest.param(ALL3, _data(True, False, False), CURRENT, id="only current"),
    pytest.param(
        {"inProgress": GEN_CHECK, **READY},
        {},
        f"failed to evaluate the CEL expression '{GEN_CHECK}': no such attribute(s):"
        " status.observedGeneration",
        id="no status, inProgress",
    ),
    pytest.param(
        READY,
        {},
        f"failed to evaluate the CEL expression '{READY_FAILED}': no such attribute(s):"
        " status.conditions",
        id="no status, no inProgress",
    ),
    pytest.param(
        {"inProgress": GEN_CHECK, **READY},
        {"status": {}},
        f"failed to evaluate the CEL expression '{READY_FAILED}': no such key: conditions",
        id="status without conditions, inProgress",
    ),
    pytest.param(
        READY,
        {"status": {}},
        f"failed to evaluate the CEL expression '{READY_FAILED}': no such key: conditions",
        id="status without conditions, no inProgress",
    ),
    pytest.param(
        {"inProgress": GEN_CHECK, **READY},
        {"status": {"conditions": []}},
        FAILED,
        id="empty conditions, inProgress",
    ),
    pytest.param(READY, {"status": {"conditions": []}}, FAILED, id="empty conditions"),
    pytest.param(
        {"inProgress": GEN_CHECK, **READY}, GENERATIONS, IN_PROGRESS, id="observed, inProgress"
    ),
    pytest.param(READY, GENERATIONS, IN_PROGRESS, id="observed, no inProgress"),
    pytest.param(
        {"current": "status.observedGeneration == '2'"},
        {"metadata": {"generation": 2}, "status": {"observedGeneration": "2"}},
        CURRENT,
        id="non-int64 observedGeneration",
    ),
    pytest.param(
        {"current": "metadata.generation == '2'"},
        {"metadata": {"generation": "2"}, "status": {"observedGeneration": 2}},
        CURRENT,
        id="non-int64 generation",
    ),
]


@pytest.mark.parametrize(("exprs", "obj", "expected"), EVALUATE)
def test_status_evaluator_evaluate(
    exprs: dict[str, str], obj: dict[str, Any], expected: str
) -> None:
    evaluator = flux_port.StatusEvaluator.new(exprs)
    if expected in (CURRENT, FAILED, IN_PROGRESS):
        assert evaluator.evaluate(obj) == expected
        return
    with pytest.raises(CELError) as raised:
        evaluator.evaluate(obj)
    message = str(raised.value)
    assert expected.startswith(message) and message.count(": ") >= 2, (message, expected)


def test_an_evaluation_error_reads_as_unknown() -> None:
    """kstatus's GenericStatusReader: the status function's error is the Unknown status
    (`TestStatusReader_CustomResourceLifeCycle`'s first event: no status yet)."""
    reader = _reader(
        {
            "apiVersion": "bitnami.com/v1alpha1",
            "kind": "SealedSecret",
            "inProgress": GEN_CHECK,
            **READY,
        }
    )
    obj = {"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "metadata": {}}
    assert reader.read_status_for_object(obj) == UNKNOWN


LABELS = labels_delivered_by("flux")


@pytest.mark.slow
@pytest.mark.parametrize("label", LABELS)
def test_every_kustomization_builds_its_status_reader_and_reads_every_job(label: str) -> None:
    """kustomize-controller calls NewStatusReader at the start of every reconcile: it must
    succeed (on main: two MPIJob entries, a terminal error on every Flux cluster), and every
    job the Kustomization applies must be one it reads (else kstatus' own readers, which do
    not know the operators' conditions, judge it)."""
    require_kustomize()
    repo = rendered(label)
    checked = 0
    for path, docs in repo.gitops.items():
        for ks in (d for d in docs if d.get("kind") == "Kustomization"):
            exprs = ks["spec"].get("healthCheckExprs")
            if not exprs:
                continue
            reader = flux_port.StatusReader.new(exprs)
            for obj in repo.build(ks["spec"]["path"]):
                if obj["kind"] in {"PyTorchJob", "TFJob", "MPIJob", "TrainJob"}:
                    group, kind = flux_port.group_kind(obj["apiVersion"], obj["kind"])
                    assert reader.supports(group, kind), (path, obj["kind"])
                    checked += 1
    assert checked, "no Flux Kustomization applies a job"
