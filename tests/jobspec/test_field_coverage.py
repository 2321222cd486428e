"""Every spec field reaches the cluster, or says why it does not (issue 9's guard).

The leaf fields are found by walking the JSON Schemas themselves (no hand-kept list of
fields). For each one the test takes the rich fixture repository (tests/golden/rich, which
uses every feature), sets that one field to another valid value, renders, runs the real
`kustomize build` on every overlay and asserts the built output (plus gitops/) differs from
the baseline. A field that cannot change the output is listed in NOT_IN_OUTPUT with the
reason; a field whose generated value would be refused gets a value in CHOSEN. A new field
in a schema with neither an effect nor an entry fails here.

This is the check the kustomize-build invariant could not make: that invariant compares
kustomize with the Python model, so a field the model drops is dropped by both.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.jobspec.schema_leaves import all_leaves, schema_at, tokens
from tests.tools import REPO, require_tool
from trainops import build
from trainops.core import paths
from trainops.core.errors import InputError
from trainops.jobspec.load import load_repository
from trainops.render import render_repository

# Seconds to minutes: `make test` runs it, `make test-fast` does not.
pytestmark = pytest.mark.slow

RICH = REPO / "tests" / "golden" / "rich"
# Where each schema's documents live in a repository.
SCHEMAS = {"trainingjob": "jobs", "clusterprofile": "clusters", "trainops": "trainops.yaml"}

# Fields that cannot change what is delivered, and why.
NOT_IN_OUTPUT = {
    # The memory estimate (jobspec/fits.py): read at load, where a job that cannot fit its
    # targets' GPUs is refused (tests/jobspec/test_fits.py); nothing rendered depends on them.
    **{
        f"trainingjob:model.{key}": "read by the per-GPU memory estimate at load only"
        " (tests/jobspec/test_fits.py)"
        for key in (
            "parameters",
            "largestLayerParameters",
            "layers",
            "vocabSize",
            "sequenceLength",
            "microBatch",
            "gradientCheckpointing",
        )
    },
    "trainingjob:model.config": "a config.json read at load for the sizes above and"
    " `hiddenSize` (tests/jobspec/test_model_size.py), whose effect `model.hiddenSize` covers",
    "trainingjob:$schema": "an editor hint (yaml-language-server), never read",
    "trainingjob:name": "must equal the file name (checked at load); renaming the job renames"
    " every rendered path and object (tests/render/test_render.py)",
    "clusterprofile:$schema": "an editor hint (yaml-language-server), never read",
    "clusterprofile:name": "must equal the file name; jobs name the cluster in `targets`",
    "clusterprofile:kubernetesVersion": "selects the core JSON Schemas `trainops validate` uses",
    "clusterprofile:installed.kueue.version": "a check: jobs of a kind its default"
    " integrations leave off are refused at load (tests/jobspec/test_installed.py)",
    "clusterprofile:installed.kueue.integrations": "a check: jobs of a kind not listed are"
    " refused at load on a Kueue cluster (tests/jobspec/test_installed.py)",
    "clusterprofile:installed.mpiJobs": "a check: an MPIJob of the other API version is"
    " refused at load (tests/jobspec/test_installed.py)",
    "clusterprofile:monitoring.ncclTestsImage": "the image of `trainops preflight`'s MPIJob,"
    " rendered on demand, never delivered",
    "clusterprofile:monitoring.minBusBandwidthGBps": "what `trainops preflight` compares the"
    " measured bus bandwidth with",
    "clusterprofile:monitoring.prometheusUrl": "where `trainops top` queries Prometheus (read"
    " from the cluster at run time, never rendered)",
    "clusterprofile:network.allowHostNetwork": "a check: jobs with hostNetwork are refused"
    " where it is false",
    "clusterprofile:gpus[].name": "the name jobs use in `targets[].gpuProduct` (on a Trainer"
    " v2 cluster also in its runtimes' names, `trainops-torch-<name>`)",
    "clusterprofile:operator.version": "a check: 1.7 to 1.9 for `training-operator`, 2.3 for"
    " `trainer` (SUPPORTED_RELEASES); within that, what is rendered does not depend on the"
    " release (docs/cluster.md#operator-releases)",
    "clusterprofile:gpus[].perNode": "a check: a pod may not ask for more GPUs than a node has",
    "clusterprofile:storage.classes": "a check: the storage classes jobs may name",
    "clusterprofile:crds": "CRDs `trainops validate` checks against, not delivered",
    "clusterprofile:policy.*": "rule severities for `trainops validate`, not delivered",
    "clusterprofile:context": "the kubeconfig context the cluster-facing commands (status,"
    " explain, live-diff, validate --server-side) use; not delivered",
    "clusterprofile:capacity.nodes": "declared capacity for `trainops capacity`, the"
    " gang-unschedulable rule and the report; not delivered",
    "clusterprofile:capacity.queues.*.gpus": "declared queue quota for `trainops capacity` and"
    " queue-quota-exceeded; not delivered",
    "trainops:$schema": "an editor hint (yaml-language-server), never read",
    "trainingjob:tensorflow.evaluator.replicas": "TensorFlow runs one Evaluator: only 1 is"
    " accepted (the role block is shared with the parameter servers)",
    "clusterprofile:podSecurity.level": "the level the `pod-security` rule checks, not delivered",
    "clusterprofile:podSecurity.allowCapabilities": "exceptions the `pod-security` rule admits,"
    " not delivered",
    "clusterprofile:podSecurity.allowHostPaths": "exceptions the `pod-security` rule admits,"
    " not delivered",
    "clusterprofile:providedByPlatform.queues": "a check at load: the queue the profile names"
    " is delivered from its manifests or installed by the platform; not delivered",
    "clusterprofile:providedByPlatform.networks": "a check at load, as for queues",
    "clusterprofile:providedByPlatform.priorityClasses": "a check at load, as for queues",
    "clusterprofile:jobAccess.serviceAccounts[].name": "the pod fence (issue 29): accounts jobs"
    " may name, checked at load and by pod-fence; not delivered",
    "clusterprofile:jobAccess.serviceAccounts[].automountToken": "the pod fence: whether that"
    " account's token may be mounted; not delivered",
    "clusterprofile:jobAccess.priorityClasses": "the pod fence: priority classes jobs may name",
    "clusterprofile:jobAccess.schedulerNames": "the pod fence: schedulers jobs may name",
    "clusterprofile:jobAccess.tolerations": "the pod fence: tolerations jobs may add",
    "clusterprofile:jobAccess.secretVolumes": "the pod fence: Secrets jobs may mount",
    "clusterprofile:jobAccess.imagePullSecrets": "the pod fence: registry credentials jobs may use",
    "clusterprofile:jobAccess.sharedClaims[].name": "the pod fence: claims jobs may mount",
    "clusterprofile:jobAccess.sharedClaims[].writable": "the pod fence: whether read-write",
    "clusterprofile:jobAccess.sharedClaims[].createdBy": "the pod fence: the job that creates it",
}


def _other_operator(cluster: dict[str, Any]) -> None:
    """Trainer v2 <-> Training Operator v1, with a version the other one accepts."""
    v2 = cluster.get("operator", {}).get("name") == "trainer"
    cluster["operator"] = (
        {"name": "training-operator", "version": "1.9"}
        if v2
        else {"name": "trainer", "version": "2.3"}
    )
    if v2 and cluster["scheduler"]["name"] == "kueue":  # Kueue must manage the PyTorchJobs now
        integrations = ["kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/mpijob"]
        cluster.setdefault("installed", {}).setdefault("kueue", {})["integrations"] = [
            *integrations,
            "trainer.kubeflow.org/trainjob",
        ]


def _other_mpi_api(job: dict[str, Any]) -> None:
    """v1 <-> v2beta1, with the target's operator following (`installed.mpiJobs`: one serves
    `mpijobs.kubeflow.org`): the job moves to the cluster serving the other version."""
    if job["mpi"].get("apiVersion") == "kubeflow.org/v1":
        del job["mpi"]["apiVersion"]
        job["targets"] = [{"cluster": "rdma-volcano", "gpuProduct": "a100"}]
    else:
        job["mpi"]["apiVersion"] = "kubeflow.org/v1"
        job["targets"] = [{"cluster": "tcp-default"}]


def _slack_to_webhook(cluster: dict[str, Any]) -> None:
    """The first notification from Slack to a webhook (which has no channel)."""
    first = cluster["notifications"][0]
    first["type"] = "webhook"
    del first["channel"]


def _to_tcp(cluster: dict[str, Any]) -> None:
    cluster["network"]["transport"] = "tcp"
    del cluster["network"]["rdma"]


def _add_namespace(cluster: dict[str, Any]) -> None:
    """A third training namespace, whose Multus network the platform provides (the cluster's
    manifests deliver it in the first two only)."""
    cluster["namespaces"] = [*cluster["namespaces"], "team-c"]
    rdma = cluster.get("network", {}).get("rdma", {})
    if "multusNetwork" in rdma:
        cluster.setdefault("providedByPlatform", {})["networks"] = [rdma["multusNetwork"]]


def _provided(*path: str, key: str) -> Callable[[dict[str, Any]], None]:
    """Rename a platform object the profile names, declared installed by the platform (the
    manifests deliver the old name only; a name neither delivered nor declared is refused)."""

    def change(cluster: dict[str, Any]) -> None:
        node = cluster
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = f"{node[path[-1]]}-other"
        cluster.setdefault("providedByPlatform", {}).setdefault(key, []).append(node[path[-1]])

    return change


def _own_volume(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Change a volume of the job's own claim (`scratch`, with a size): the shared claims the
    profile lists are fenced (read-only unless writable, no other job's claim)."""

    def change(job: dict[str, Any]) -> None:
        job["volumes"]["scratch"][field] = value

    return change


def _to_tensorflow(job: dict[str, Any]) -> None:
    """Trainer v2 clusters run PyTorch jobs only (spec/trainer_v2.py): drop those targets."""
    job["framework"] = "tensorflow"
    job["targets"] = [t for t in job["targets"] if not t["cluster"].endswith("-v2")]


# Values for fields whose generated change would be refused by a cross-field check.
CHOSEN: dict[str, Any] = {
    "trainingjob:framework": _to_tensorflow,
    # Unset means true (the schema's default): the change is the opt-out.
    "trainingjob:securityContext.readOnlyRootFilesystem": False,
    "trainingjob:namespace": "prod-training",
    "trainingjob:resources.cpu": "33",
    "trainingjob:resources.memory": "100Gi",
    "trainingjob:sharedMemory": "1Gi",
    "trainingjob:volumes.*.size": "3Ti",
    "trainingjob:volumes.*.storageClass": "nfs-rdma",
    "trainingjob:volumes.*.accessMode": "ReadOnlyMany",
    "trainingjob:targets[].cluster": "rdma-volcano",
    "trainingjob:targets[].gpuProduct": "a100",
    "clusterprofile:network.transport": _to_tcp,
    "clusterprofile:notifications[].type": _slack_to_webhook,
    "clusterprofile:notifications[].events": ["sync-failed"],
    "clusterprofile:operator.name": _other_operator,
    "trainingjob:mpi.apiVersion": _other_mpi_api,
    "clusterprofile:network.rdma.gdrLevel": "PHB",
    "trainingjob:tensorflow.parameterServers.resources.memory": "20Gi",
    "trainingjob:tensorflow.evaluator.resources.memory": "12Gi",
    "trainingjob:mpi.launcher.resources.memory": "5Gi",
    # A key DeepSpeed reads: an unknown one is refused at load (spec/deepspeed_config.py).
    "trainingjob:deepspeed.config": {"steps_per_print": 7},
    # The pod fields are checked against their core schemas: values they accept.
    "trainingjob:imagePullSecrets": ["registry-example", "mirror"],
    "trainingjob:affinity": {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone"}}
            ]
        }
    },
    "trainingjob:extraVolumes": [
        {"name": "certs", "secret": {"secretName": "registry-ca"}},
        {"name": "scratch", "emptyDir": {}},
    ],
    "trainingjob:extraVolumeMounts": [{"name": "certs", "mountPath": "/etc/ssl/other"}],
    "trainingjob:sidecars": [{"name": "other", "image": "busybox:1.36"}],
    "trainingjob:podTemplate.metadata": {"labels": {"coverage": "1"}},
    "trainingjob:podTemplate.spec": {"enableServiceLinks": True},
    "trainingjob:replicaPodTemplates.*.metadata": {"labels": {"coverage": "1"}},
    "trainingjob:replicaPodTemplates.*.spec": {"hostIPC": False},
    "clusterprofile:namespaces": _add_namespace,
    "clusterprofile:network.rdma.multusNetwork": _provided(
        "network", "rdma", "multusNetwork", key="networks"
    ),
    "clusterprofile:scheduler.queue": _provided("scheduler", "queue", key="queues"),
    # The claim fence (jobAccess.sharedClaims): change what the job owns.
    "trainingjob:volumes.*.claimName": _own_volume("claimName", "scratch-space"),
    "trainingjob:volumes.*.readOnly": _own_volume("readOnly", True),
    "trainingjob:dataSync.volume": "scratch",
    # Jobs may name only the priority classes the profile lets them (`jobAccess`).
    "trainingjob:priorityClassName": "batch",
    "trainingjob:serviceAccountName": "evaluator",
    "clusterprofile:scheduler.priorityClass": _provided(
        "scheduler", "priorityClass", key="priorityClasses"
    ),
}


# ---------------------------------------------------------------- the schema's leaves


def _fixed(field: str) -> bool:
    """`apiVersion`, `kind`, `framework` today: one allowed value, nothing to change."""
    schema = schema_at(*field.split(":", 1))
    return "const" in schema or len(schema.get("enum", ())) == 1


# ---------------------------------------------------------------- mutating one field


def _new_value(schema: dict[str, Any], current: Any) -> Any:
    """Another valid value: a different enum member, the other boolean, +1, a longer string,
    one more list item, one more map entry."""
    if "enum" in schema:
        return next(v for v in schema["enum"] if v != current)
    types = schema.get("type", [])
    types = types if isinstance(types, list) else [types]
    if "boolean" in types:
        return not current
    if "integer" in types and (isinstance(current, int) or not current):
        value = current if isinstance(current, int) else schema.get("minimum", 0)
        return value + 1 if value + 1 <= schema.get("maximum", value + 1) else value - 1
    if "array" in types:
        return [*(current or []), "--coverage"]
    if "object" in types:
        return {**(current or {}), "COVERAGE": "1"}
    value = f"{current}x" if current else "coverage"
    assert re.search(schema.get("pattern", ""), value), f"give a value in CHOSEN ({value!r})"
    return value


def _pick(container: Any, rest: list[str]) -> Any:
    """The list index or map key to descend into: the first that has the rest of the path."""
    keys = list(range(len(container))) if isinstance(container, list) else sorted(container)
    assert keys, "the rich fixture must use this field: extend tests/golden/rich"
    return next((k for k in keys if _has(container[k], rest)), keys[0])


def _has(data: Any, tokens: list[str]) -> bool:
    if not tokens:
        return True
    token, rest = tokens[0], tokens[1:]
    if token in {"[]", "*"}:
        items = (
            data
            if isinstance(data, list)
            else list(data.values())
            if isinstance(data, dict)
            else []
        )
        return any(_has(item, rest) for item in items)
    return isinstance(data, dict) and token in data and _has(data[token], rest)


def _mutate(data: dict[str, Any], schema_name: str, dotted: str) -> None:
    chosen = CHOSEN.get(f"{schema_name}:{dotted}")
    if callable(chosen):
        chosen(data)
        return
    path_tokens = tokens(dotted)
    node: Any = data
    for i, token in enumerate(path_tokens[:-1]):
        if token in {"[]", "*"}:
            node = node[_pick(node, path_tokens[i + 1 :])]
        else:
            node = node.setdefault(token, {})
    last = path_tokens[-1]
    key = _pick(node, []) if last == "*" else last
    node[key] = (
        chosen if chosen is not None else _new_value(schema_at(schema_name, dotted), node.get(key))
    )


def _documents(source: Path) -> dict[str, dict[str, Any]]:
    """Repo-relative path -> data of every input file (comments dropped, data kept)."""
    out = {}
    for path in sorted(p for p in source.rglob("*") if p.suffix in {".yaml", ".yml"}):
        out[path.relative_to(source).as_posix()] = yaml.safe_load(path.read_text())
    return out


def _target_document(docs: dict[str, dict[str, Any]], schema_name: str, dotted: str) -> str:
    where = SCHEMAS[schema_name]
    names = [n for n in docs if n == where or n.startswith(where + "/")]
    return next((n for n in names if _has(docs[n], tokens(dotted))), names[0])


def _delivered(docs: dict[str, dict[str, Any]], root: Path) -> dict[str, str]:
    """What reaches the clusters: `kustomize build` of every overlay, and gitops/."""
    for name, data in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(yaml.safe_dump(data, sort_keys=False))
    files = render_repository(load_repository(root))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    out = {name: text for name, text in files.items() if name.startswith(paths.GITOPS_DIR)}
    for overlay in sorted((root / paths.OVERLAYS_DIR).iterdir()):
        out[f"build {overlay.name}"] = _built(root, overlay)
    return out


# `kustomize build` output by a digest of every file it can read: a field test rebuilds only
# the overlays its change reaches (a job's field: the clusters it targets), the others are the
# baseline's builds. kustomize reads nothing else (no remote bases, no plugins), so the output
# is the same: a build is a function of its files.
_BUILDS: dict[str, str] = {}
_RELATIVE = re.compile(r"(?:\.\./)+[^\s\"',\]]+")


def _inputs(root: Path, overlay: Path) -> list[Path]:
    """Every file `kustomize build overlay` can read: the overlay's tree and the bases it names.

    Fails if a kustomization reaches outside those (then the digest would miss an input)."""
    own = [p for p in overlay.rglob("*") if p.is_file()]
    named = "".join(p.read_text(encoding="utf-8") for p in own)
    bases = [b for b in (root / paths.BASE_DIR).iterdir() if f"base/{b.name}" in named]
    files = sorted(own + [p for b in bases for p in b.rglob("*") if p.is_file()])
    inside = [overlay.resolve(), *(b.resolve() for b in bases)]
    for path in files:
        for ref in _RELATIVE.findall(path.read_text(encoding="utf-8")):
            target = (path.parent / ref).resolve()
            assert any(target.is_relative_to(d) for d in inside), f"{path} reads {ref}"
    return files


def _built(root: Path, overlay: Path) -> str:
    digest = hashlib.sha256()
    for path in _inputs(root, overlay):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    key = digest.hexdigest()
    if key not in _BUILDS:
        _BUILDS[key] = build.kustomize(overlay)
    return _BUILDS[key]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")
    return _delivered(_documents(RICH), tmp_path_factory.mktemp("baseline"))


@pytest.mark.parametrize(
    "field", [f for f in all_leaves(SCHEMAS) if f not in NOT_IN_OUTPUT and not _fixed(f)]
)
def test_field_changes_what_is_delivered(
    field: str, baseline: dict[str, str], tmp_path: Path
) -> None:
    schema_name, dotted = field.split(":", 1)
    docs = copy.deepcopy(_documents(RICH))
    name = _target_document(docs, schema_name, dotted)
    _mutate(docs[name], schema_name, dotted)
    try:
        changed = _delivered(docs, tmp_path)
    except InputError as err:
        pytest.fail(f"{field}: the changed spec was refused ({err}); give a value in CHOSEN")
    assert changed != baseline, (
        f"`{dotted}` changed in {name} but nothing delivered changed: the field is dropped on"
        " the way, or list it in NOT_IN_OUTPUT with the reason"
    )


def test_the_lists_name_real_fields() -> None:
    leaves = set(all_leaves(SCHEMAS))
    stale = sorted((set(NOT_IN_OUTPUT) | set(CHOSEN)) - leaves)
    assert not stale, f"no such schema field: {stale}"


def test_the_walk_finds_the_fields_people_write() -> None:
    """Guard the walker itself: nested, list and map fields are all reached."""
    leaves = set(all_leaves(SCHEMAS))
    for expected in (
        "trainingjob:targets[].env",
        "trainingjob:volumes.*.mountPath",
        "trainingjob:deepspeed.zeroStage",
        "trainingjob:securityContext.fsGroup",
        "clusterprofile:gpus[].tolerations[].key",
        "clusterprofile:network.rdma.gdrLevel",
        "trainops:repoURL",
    ):
        assert expected in leaves
