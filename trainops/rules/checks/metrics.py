"""Metrics wiring: ServiceMonitor -> Service port name -> pod container port, and PodMonitor
-> pod container port, matching selectors against the labels the Training Operator puts on
pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.kube.objects import Object
from trainops.kube.pods import PodTemplate
from trainops.rules.context import Context, same_namespace
from trainops.rules.model import Rule, Violation

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


def _watched(monitor: Object, namespace: str | None) -> bool:
    """Whether a ServiceMonitor/PodMonitor looks in `namespace` (its `namespaceSelector`:
    `any`, `matchNames`, else its own namespace)."""
    namespaces = as_dict(monitor.spec.get("namespaceSelector"))
    names = {str(n) for n in as_list(namespaces.get("matchNames"))}
    if namespaces.get("any") is True:
        return True
    if names:
        return namespace is None or namespace in names
    return same_namespace(namespace, monitor.namespace)


def _services_of(monitor: Object, ctx: Context) -> list[Object]:
    selector = as_dict(monitor.spec.get("selector"))
    required = {str(k): str(v) for k, v in as_dict(selector.get("matchLabels")).items()}
    return [
        svc
        for svc, labels in ctx.labelled_services.candidates(required)
        if _watched(monitor, svc.namespace) and selector_matches(selector, labels, wildcard=False)
    ]


def _monitored_pods(monitor: Object, ctx: Context) -> list[tuple[Object, PodTemplate]]:
    """Pod templates a PodMonitor selects, by the labels their pods carry (the operator's
    `training.kubeflow.org/*` included). An empty selector selects every pod of the
    namespaces, ours or not: nothing to judge then."""
    selector = as_dict(monitor.spec.get("selector"))
    if not as_dict(selector.get("matchLabels")) and not as_list(selector.get("matchExpressions")):
        return []
    required = {
        str(k): str(v)
        for k, v in as_dict(selector.get("matchLabels")).items()
        if k not in PER_POD_LABELS
    }
    return [
        (obj, pod)
        for (obj, pod), labels in ctx.labelled_pods.candidates(required)
        if _watched(monitor, obj.namespace) and selector_matches(selector, labels, wildcard=True)
    ]


def _declared_ports(pod: PodTemplate) -> list[dict[str, Any]]:
    """Container ports of a pod, sidecars (init containers with restartPolicy Always) too."""
    return [
        port
        for c in pod.containers(init=True)
        if not c.init or c.data.get("restartPolicy") == "Always"
        for port in c.ports()
    ]


def _pod_monitor(obj: Object, ctx: Context) -> Iterator[Violation]:
    selected = _monitored_pods(obj, ctx)
    if not selected:
        return
    ports = [port for _, pod in selected for port in _declared_ports(pod)]
    names = sorted({str(p.get("name")) for p in ports if p.get("name")})
    numbers = {str(p.get("containerPort")) for p in ports}
    where = ", ".join(
        sorted({f"{o.kind} {o.name} {p.replica_type or ''}".strip() for o, p in selected})
    )
    declared = f"declared: {', '.join(names) or 'no named ports'}"
    for i, raw in enumerate(as_list(obj.spec.get("podMetricsEndpoints"))):
        endpoint = as_dict(raw)
        base = ("spec", "podMetricsEndpoints", i)
        # `port` (a name) takes precedence over `portNumber` and the deprecated `targetPort`.
        if endpoint.get("port") is not None:
            port = str(endpoint["port"])
            if port not in names:
                yield Violation(
                    f"podMetricsEndpoints port `{port}` is not a container port name of the"
                    f" pods it selects ({where}; {declared}): Prometheus discovers no target",
                    (*base, "port"),
                )
            continue
        for key in ("portNumber", "targetPort"):
            value = endpoint.get(key)
            if value is None:
                continue
            text = str(value)
            known = names if not text.isdigit() else sorted(numbers)
            if text not in known:
                yield Violation(
                    f"podMetricsEndpoints {key} `{text}` is not a port the pods it selects"
                    f" declare ({where}; ports: {', '.join(known) or 'none'}): Prometheus drops"
                    " undeclared ports, so it scrapes nothing",
                    (*base, key),
                )
            break


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
        for key, value in selector.items():
            if ctx.find_job(value, obj.namespace) is not None:
                yield Violation(
                    f"selector {key}={value} matches no pod of job `{value}`: the Training"
                    f" Operator labels its pods training.kubeflow.org/job-name={value}",
                    ("spec", "selector", key),
                )
        return
    declared = [(p, c.name) for pod in pods for c in pod.containers() for p in c.ports()]
    for i, raw in enumerate(as_list(obj.spec.get("ports"))):
        port = as_dict(raw)
        target = port.get("targetPort", port.get("port"))
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
    elif obj.kind == "PodMonitor" and obj.group == MONITORING_GROUP:
        yield from _pod_monitor(obj, ctx)
    elif obj.kind == "Service" and obj.group == "":
        yield from _service(obj, ctx)


RULES = (
    Rule(
        slug="metrics-port-mismatch",
        code="TO904",
        severity=Severity.ERROR,
        summary="A ServiceMonitor endpoint port name not on the Service it selects, a"
        " PodMonitor endpoint port (name or number) no selected pod declares, or a Service"
        " whose named targetPort no selected container declares (warning: a numeric"
        " targetPort not declared).",
        why="Prometheus resolves the chain ServiceMonitor -> Service port name -> endpoints ->"
        " pod port, or PodMonitor -> pod port (matching the pods' labels, the Training"
        " Operator's `training.kubeflow.org/*` included); one broken link and the job's"
        " metrics silently never arrive.",
        fix="Name the container port (e.g. `metrics`), target it by name from the Service or"
        " PodMonitor, and select pods by `training.kubeflow.org/job-name`.",
        example="Service: {selector: {job-name: my-job}, ports: [{name: metrics, port: 8000}]}\n"
        "PodMonitor: {podMetricsEndpoints: [{port: metrics-typo}]}",
        check=_metrics,
        references=("https://prometheus-operator.dev/docs/developer/getting-started/",),
    ),
)
