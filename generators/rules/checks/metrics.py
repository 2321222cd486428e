"""Metrics wiring: ServiceMonitor -> Service port name -> pod container port, matching
selectors against the labels the Training Operator puts on pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from generators.findings import Severity
from generators.rules.context import Context, Object, PodTemplate, as_dict, as_list, same_namespace
from generators.rules.model import Rule, Violation

MONITORING_GROUP = "monitoring.coreos.com"
# Labels whose value differs per pod; a selector on them matches some pod of the template.
PER_POD_LABELS = frozenset({"training.kubeflow.org/replica-index"})


def selector_matches(selector: dict[str, Any], labels: dict[str, str], *, wildcard: bool) -> bool:
    """A LabelSelector (`matchLabels` + `matchExpressions`) against labels."""
    for key, value in as_dict(selector.get("matchLabels")).items():
        if wildcard and key in PER_POD_LABELS:
            continue
        if labels.get(str(key)) != str(value):
            return False
    for raw in as_list(selector.get("matchExpressions")):
        expr = as_dict(raw)
        key, op = str(expr.get("key")), expr.get("operator")
        values = {str(v) for v in as_list(expr.get("values"))}
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and labels.get(key) in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def _pods_of(service: Object, ctx: Context) -> list[PodTemplate]:
    selector = {str(k): str(v) for k, v in as_dict(service.spec.get("selector")).items()}
    if not selector:
        return []
    required = {k: v for k, v in selector.items() if k not in PER_POD_LABELS}
    return [
        pod
        for (obj, pod), labels in ctx.labelled_pods.candidates(required)
        if same_namespace(obj.namespace, service.namespace)
        and selector_matches({"matchLabels": selector}, labels, wildcard=True)
    ]


def _services_of(monitor: Object, ctx: Context) -> list[Object]:
    selector = as_dict(monitor.spec.get("selector"))
    namespaces = as_dict(monitor.spec.get("namespaceSelector"))
    names = {str(n) for n in as_list(namespaces.get("matchNames"))}
    required = {str(k): str(v) for k, v in as_dict(selector.get("matchLabels")).items()}
    found = []
    for svc, labels in ctx.labelled_services.candidates(required):
        if namespaces.get("any") is True:
            pass
        elif names:
            if svc.namespace not in names:
                continue
        elif not same_namespace(svc.namespace, monitor.namespace):
            continue
        if selector_matches(selector, labels, wildcard=False):
            found.append(svc)
    return found


def _monitor(obj: Object, ctx: Context) -> Iterator[Violation]:
    services = _services_of(obj, ctx)
    if not services:
        return
    for i, endpoint in enumerate(as_list(obj.spec.get("endpoints"))):
        port = as_dict(endpoint).get("port")
        if port is None:
            continue
        names = {
            str(as_dict(p).get("name")) for svc in services for p in as_list(svc.spec.get("ports"))
        }
        if str(port) not in names:
            yield Violation(
                f"endpoint port `{port}` is not a port name of the selected Service(s)"
                f" {', '.join(s.name for s in services)} (ports: {', '.join(sorted(names))}):"
                " Prometheus scrapes nothing",
                ("spec", "endpoints", i, "port"),
            )


def _service(obj: Object, ctx: Context) -> Iterator[Violation]:
    selector = {str(k): str(v) for k, v in as_dict(obj.spec.get("selector")).items()}
    if not selector:
        return
    pods = _pods_of(obj, ctx)
    if not pods:
        jobs = {
            o.name
            for o in ctx.objects
            if o.is_kubeflow_job and same_namespace(o.namespace, obj.namespace)
        }
        for key, value in selector.items():
            if value in jobs:
                yield Violation(
                    f"selector {key}={value} matches no pod of job `{value}`: the Training"
                    f" Operator labels its pods training.kubeflow.org/job-name={value}",
                    ("spec", "selector", key),
                )
        return
    for i, raw in enumerate(as_list(obj.spec.get("ports"))):
        port = as_dict(raw)
        target = port.get("targetPort", port.get("port"))
        declared = [(p, c.name) for pod in pods for c in pod.containers() for p in c.ports()]
        if isinstance(target, str) and not target.isdigit():
            if not any(p.get("name") == target for p, _ in declared):
                yield Violation(
                    f"targetPort `{target}` is not a named port of any container the Service"
                    " selects: the Service has no endpoints",
                    ("spec", "ports", i),
                )
        elif target is not None and not any(
            str(p.get("containerPort")) == str(target) for p, _ in declared
        ):
            yield Violation(
                f"targetPort {target} is not declared by any container the Service selects"
                " (it works only if the process listens there anyway): declare it in `ports`",
                ("spec", "ports", i),
                Severity.WARNING,
            )


def _metrics(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.kind == "ServiceMonitor" and obj.group == MONITORING_GROUP:
        yield from _monitor(obj, ctx)
    elif obj.kind == "Service" and obj.group == "":
        yield from _service(obj, ctx)


RULES = (
    Rule(
        slug="metrics-port-mismatch",
        severity=Severity.ERROR,
        summary="A ServiceMonitor endpoint port name not on the Service it selects, or a"
        " Service whose named targetPort no selected container declares (warning: a numeric"
        " targetPort not declared).",
        why="Prometheus resolves the chain ServiceMonitor -> Service port name -> endpoints ->"
        " pod port; one broken link and the job's metrics silently never arrive.",
        fix="Name the container port (e.g. `metrics`), target it by name from the Service, and"
        " select pods by `training.kubeflow.org/job-name`.",
        example="Service: {selector: {job-name: my-job}, ports: [{name: metrics, port: 8000}]}",
        check=_metrics,
        references=("https://prometheus-operator.dev/docs/developer/getting-started/",),
    ),
)
