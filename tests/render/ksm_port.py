"""kube-state-metrics v2.17.0's custom resource state metrics (github.com/kubernetes/
kube-state-metrics, pkg/customresourcestate/registry_factory.go), ported small: the series it
exports for one object under one `resources[]` entry of its configuration, Gauges only (what
`render/kube_state_metrics.py` configures). Held to its own tests in test_ksm_port.py.

- fullName: `<metricNamePrefix>_<name>`, the prefix `kube_customresource` when unset, none
  when empty;
- compile: the common labels `customresource_group`, `customresource_version`,
  `customresource_kind` (:44), the resource's and the metric's `labelsFromPath` merged;
- compiledGauge.Values over a list: per item, the value from `valueFrom` (toFloat64: a bool,
  `true`/`yes` 1, `false`/`no`/`unknown` 0, a number), labels from the item's paths; a
  missing value drops the item (:287); the base labels (generate, DefaultLabels) fill in
  what the item's labels do not set.
"""

from __future__ import annotations

from typing import Any

DEFAULT_PREFIX = "kube_customresource"


def full_name(prefix: str | None, name: str) -> str:
    prefix = DEFAULT_PREFIX if prefix is None else prefix
    return "_".join(p for p in (prefix, name) if p)


def get(obj: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def to_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("true", "yes"):
            return 1.0
        if lowered in ("false", "no", "unknown"):
            return 0.0
        try:
            return float(value)
        except ValueError:
            return None
    return None


def gauge_values(gauge: dict[str, Any], obj: dict[str, Any]) -> list[tuple[dict[str, str], float]]:
    """compiledGauge.Values for a list path (labels, value), sorted as scrapeValuesFor does."""
    out = []
    for item in get(obj, gauge["path"]) or []:
        value = to_float(get(item, gauge["valueFrom"]))
        if value is None:
            continue
        labels = {}
        for label, path in (gauge.get("labelsFromPath") or {}).items():
            found = get(item, path)
            if found is not None:
                labels[label] = str(found)
        out.append((labels, value))
    return sorted(out, key=lambda lv: sorted(lv[0].items()))


def series(
    resource: dict[str, Any], obj: dict[str, Any]
) -> list[tuple[str, dict[str, str], float]]:
    """(metric name, labels, value) of every series `resource` exports for `obj`."""
    gvk = resource["groupVersionKind"]
    base = {
        "customresource_group": gvk["group"],
        "customresource_version": gvk["version"],
        "customresource_kind": gvk["kind"],
    }
    out = []
    for metric in resource["metrics"]:
        paths = {**(resource.get("labelsFromPath") or {}), **(metric.get("labelsFromPath") or {})}
        family_base = dict(base)
        for label, path in paths.items():
            found = get(obj, path)
            if found is not None:
                family_base[label] = str(found)
        name = full_name(resource.get("metricNamePrefix"), metric["name"])
        for labels, value in gauge_values(metric["each"]["gauge"], obj):
            out.append((name, {**family_base, **labels}, value))
    return out
