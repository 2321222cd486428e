"""Flux kustomize-controller v1.9.4 (fluxcd/kustomize-controller, tag v1.9.4) with fluxcd/pkg
ssa v0.76.1, as far as our Kustomizations depend on it:

- when a Kustomization applies: `internal/controller/kustomization_controller.go`
  (`checkDependencies`: only once every `dependsOn` Kustomization (same namespace when none
  is given) is Ready at the revision of the same source), so a dependency cycle anywhere
  below it (fluxcd/pkg `runtime/dependency` `Sort` finds them) holds it back for ever;
- how it applies: `ResourceManager.ApplyAllStaged` (`ssa/manager_apply.go`): CRDs,
  Namespaces and ClusterRoles first, then kinds whose name ends in `Class`, then the
  controller's `--custom-stage-kinds` (none by default), then the rest; within a stage
  `ApplyAll` server-side dry-runs every object (admission webhooks included) before applying
  any, so an object whose admission looks another up needs it from an earlier stage or an
  earlier Kustomization (`ssa/utils/is.go`: `IsClusterDefinition`, `IsClassDefinition`);
- as whom: `runtimeClient.WithServiceAccount(..., spec.serviceAccountName,
  obj.GetNamespace())`, the user `system:serviceaccount:<Kustomization namespace>:<name>`;
- how it reads health (`healthCheckExprs`): `cel.NewStatusReader(obj.Spec.HealthCheckExprs)`
  at the start of every reconcile (a failure is a terminal error: the Kustomization is
  Stalled and applies nothing), from fluxcd/pkg `runtime/cel` at runtime/v0.110.1
  (`status_reader.go`: `NewStatusReader`, `Supports`, `ReadStatusForObject`;
  `status_evaluator.go`: `NewStatusEvaluator`, `Evaluate`; `expression.go`: `NewExpression`
  parses without declarations, `EvaluateBoolean` wants a bool), with the object's top-level
  fields as the CEL variables. The CEL is evaluated by cel-python, with cel-go's `has()`:
  an absent variable or intermediate field is an error there (`no such attribute(s)`), not
  false (cel-python's reading), and kstatus's `GenericStatusReader` turns an error into
  `Unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy.evaluation import CELEvalError, Evaluator


def stage(obj: dict[str, Any]) -> int:
    """ApplyAllStaged's stage of one object (0 applied first)."""
    kind, api = obj["kind"].lower(), obj["apiVersion"]
    if (
        (kind == "customresourcedefinition" and api.startswith("apiextensions.k8s.io/"))
        or (kind == "namespace" and api == "v1")
        or (kind == "clusterrole" and api.startswith("rbac.authorization.k8s.io/"))
    ):
        return 0
    if obj["kind"].endswith("Class"):
        return 1
    return 3  # stage 2: --custom-stage-kinds, empty unless the platform sets it


Ref = tuple[str, str]  # (namespace, name), as meta.NamespacedObjectReference prints it


def sort(objects: list[tuple[Ref, list[dict[str, str]]]]) -> list[Ref]:
    """fluxcd/pkg runtime/dependency `Sort` (runtime/v0.110.1): the objects and what they
    depend on, each after its dependencies (depth first, in input order); a ValueError naming
    the cycle when there is one, wherever it is. A dependency without a namespace is in the
    dependent's."""
    vertices = [ref for ref, _ in objects]
    edges: dict[Ref, list[Ref]] = {}
    for ref, depends_on in objects:
        edges[ref] = [(d.get("namespace") or ref[0], d["name"]) for d in depends_on]
    out: list[Ref] = []
    mark: dict[Ref, str] = {}

    def visit(u: Ref) -> list[str]:
        mark[u] = "temporary"
        for v in edges.get(u, []):
            if mark.get(v) == "permanent":
                continue
            if mark.get(v) == "temporary":
                return [f"{v[0]}/{v[1]}", f"{u[0]}/{u[1]}"]
            cycle = visit(v)
            if cycle:
                return [*cycle, f"{u[0]}/{u[1]}"]
        mark[u] = "permanent"
        out.append(u)
        return []

    for u in vertices:
        if u not in mark:
            cycle = visit(u)
            if cycle:
                raise ValueError(f"circular dependency detected: {' -> '.join(reversed(cycle))}")
    return out


def dependencies(kustomizations: dict[str, dict[str, Any]], name: str) -> set[str]:
    """Every Kustomization `name` waits for, transitively (`checkDependencies`, which needs
    each `dependsOn` Ready: a cycle anywhere below `name` never becomes Ready, so `name` never
    applies). KeyError for a dependency that does not exist, ValueError for a cycle (`sort`)."""
    by_ref = {(k["metadata"]["namespace"], n): k for n, k in kustomizations.items()}
    start = (kustomizations[name]["metadata"]["namespace"], name)
    reached: dict[Ref, list[dict[str, str]]] = {}
    todo = [start]
    while todo:
        ref = todo.pop()
        if ref in reached:
            continue
        if ref not in by_ref:
            raise KeyError(f"{name}: dependency {ref[0]}/{ref[1]} does not exist")
        depends_on = by_ref[ref]["spec"].get("dependsOn") or []
        reached[ref] = depends_on
        todo += [(d.get("namespace") or ref[0], d["name"]) for d in depends_on]
    sort([(start, reached[start]), *((r, d) for r, d in reached.items() if r != start)])
    return {ref[1] for ref in reached if ref != start}


def account(kustomization: dict[str, Any]) -> str:
    """The user the controller impersonates for this Kustomization ("" for itself)."""
    name = kustomization["spec"].get("serviceAccountName")
    if not name:
        return ""
    return f"system:serviceaccount:{kustomization['metadata']['namespace']}:{name}"


# ------------------------------------------------------------------ health: runtime/cel

CURRENT, FAILED, IN_PROGRESS, UNKNOWN = "Current", "Failed", "InProgress", "Unknown"


class CELError(ValueError):
    """A parse or evaluation error, worded as cel-go words it where the tests compare."""


class _GoHasEvaluator(Evaluator):  # type: ignore[misc]
    """cel-python's evaluator with cel-go's `has(e.f)`: an error when `e` cannot be
    evaluated (an absent variable or field), `f in e` for a map (cel-spec, field selection);
    and cel-go's `&&`/`||` on two errors: the first (cel-python wraps both in another)."""

    def _logical(self, tree: lark.Tree, method: Any) -> Any:
        if len(tree.children) == 2:
            left, right = self.visit_children(tree)
            if isinstance(left, CELEvalError) and isinstance(right, CELEvalError):
                return left
        return method(self, tree)

    def conditionaland(self, tree: lark.Tree) -> Any:
        return self._logical(tree, Evaluator.conditionaland)

    def conditionalor(self, tree: lark.Tree) -> Any:
        return self._logical(tree, Evaluator.conditionalor)

    def macro_has_eval(self, exprlist: lark.Tree) -> Any:
        node = exprlist
        while node.data != "member_dot" and len(node.children) == 1:
            node = node.children[0]
        if node.data != "member_dot":
            return CELEvalError("invalid argument to has() macro")
        target = self.visit(node.children[0])
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, celpy.celtypes.MapType):
            return celpy.celtypes.BoolType(celpy.celtypes.StringType(node.children[1]) in target)
        return CELEvalError(f"invalid type for field selection: {type(target).__name__}")


def _go_message(error: object) -> str:
    """cel-go's words for cel-python's errors: an undeclared variable is `no such
    attribute(s)`, a missing map key `no such key`."""
    text = str(error.args[0] if isinstance(error, CELEvalError) and error.args else error)
    for prefix, go in (("undeclared reference to '", "no such attribute(s): "),
                       ("no such member in mapping: '", "no such key: ")):  # fmt: skip
        if text.startswith(prefix):
            return go + text[len(prefix) :].split("'", 1)[0]
    return text


@dataclass(frozen=True)
class Expression:
    """expression.go `NewExpression` (parsed, not type-checked) and `EvaluateBoolean`."""

    text: str
    ast: Any

    @classmethod
    def parse(cls, text: str) -> Expression:
        try:
            return cls(text, celpy.Environment().compile(text))
        except celpy.CELParseError as err:
            raise CELError(f"failed to parse the CEL expression '{text}': {err}") from None

    def evaluate_boolean(self, obj: Mapping[str, Any]) -> bool:
        variables = {key: celpy.json_to_cel(value) for key, value in obj.items()}
        activation = celpy.Activation(annotations={}, vars=variables)
        try:
            result = _GoHasEvaluator(ast=self.ast, activation=activation).evaluate({})
        except CELEvalError as err:
            result = err
        if isinstance(result, CELEvalError):
            raise CELError(
                f"failed to evaluate the CEL expression '{self.text}': {_go_message(result)}"
            )
        if not isinstance(result, celpy.celtypes.BoolType):
            raise CELError(f"failed to evaluate CEL expression as boolean: '{self.text}'")
        return bool(result)


@dataclass(frozen=True)
class StatusEvaluator:
    """status_evaluator.go `StatusEvaluator`: `current` required, the others optional."""

    current: Expression
    failed: Expression | None
    in_progress: Expression | None

    @classmethod
    def new(cls, exprs: Mapping[str, str]) -> StatusEvaluator:
        if not exprs.get("current"):
            raise CELError("expression Current not specified")
        parsed: dict[str, Expression | None] = {}
        for key, name in (("current", "Current"), ("failed", "Failed"),
                          ("inProgress", "InProgress")):  # fmt: skip
            try:
                parsed[key] = Expression.parse(exprs[key]) if exprs.get(key) else None
            except CELError as err:
                raise CELError(f"failed to parse the expression {name}: {err}") from None
        current = parsed["current"]
        assert current is not None
        return cls(current, parsed["failed"], parsed["inProgress"])

    def evaluate(self, obj: Mapping[str, Any]) -> str:
        """`Evaluate`: a status older than the spec is in progress; then inProgress, failed,
        current, the first true wins; none true is in progress; an error is raised."""
        observed = (obj.get("status") or {}).get("observedGeneration")
        generation = (obj.get("metadata") or {}).get("generation")
        if _is_int64(observed) and _is_int64(generation) and observed != generation:
            return IN_PROGRESS
        for expr, verdict in ((self.in_progress, IN_PROGRESS), (self.failed, FAILED),
                              (self.current, CURRENT)):  # fmt: skip
            if expr is not None and expr.evaluate_boolean(obj):
                return verdict
        return IN_PROGRESS


def _is_int64(value: object) -> bool:
    """unstructured.NestedInt64 finds an int64 (a JSON integer), nothing else."""
    return isinstance(value, int) and not isinstance(value, bool)


def group_kind(api_version: str, kind: str) -> tuple[str, str]:
    """schema.FromAPIVersionAndKind(...).GroupKind(): the group is what precedes the `/`."""
    group = api_version.rpartition("/")[0] if api_version.count("/") == 1 else ""
    return group, kind


def group_kind_string(gk: tuple[str, str]) -> str:
    """schema.GroupKind.String(): `Kind.group`, or `Kind` in the core group."""
    return f"{gk[1]}.{gk[0]}" if gk[0] else gk[1]


@dataclass(frozen=True)
class StatusReader:
    """status_reader.go `StatusReader`: one evaluator per GroupKind (or per group, for an
    entry without a kind)."""

    evaluators: Mapping[tuple[str, str], StatusEvaluator]

    @classmethod
    def new(cls, health_checks: list[Mapping[str, str]]) -> StatusReader:
        """`NewStatusReader`: a second entry for one GroupKind is an error (kustomize-
        controller: a terminal error, the Kustomization Stalled)."""
        evaluators: dict[tuple[str, str], StatusEvaluator] = {}
        for i, check in enumerate(health_checks):
            gk = group_kind(check.get("apiVersion", ""), check.get("kind", ""))
            if gk in evaluators:
                raise CELError(
                    "duplicate custom health check for GroupKind"
                    f" {group_kind_string(gk)} at healthchecks[{i}]"
                )
            try:
                evaluators[gk] = StatusEvaluator.new(check)
            except CELError as err:
                raise CELError(
                    f"failed to create custom status evaluator for healthchecks[{i}]: {err}"
                ) from None
        return cls(evaluators)

    def supports(self, group: str, kind: str) -> bool:
        return (group, kind) in self.evaluators or (group, "") in self.evaluators

    def read_status_for_object(self, obj: Mapping[str, Any]) -> str:
        """`ReadStatusForObject` through kstatus's GenericStatusReader: an evaluation error
        reads as Unknown; a GroupKind without an entry is an error (kstatus's own readers
        take it)."""
        gk = group_kind(obj["apiVersion"], obj["kind"])
        if not self.supports(*gk):
            raise CELError(f"the GroupKind {group_kind_string(gk)} is not supported")
        evaluator = self.evaluators.get(gk) or self.evaluators[gk[0], ""]
        try:
            return evaluator.evaluate(obj)
        except CELError:
            return UNKNOWN
