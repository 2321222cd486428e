"""What the renderer writes is valid, wired together, and says where it came from: checked
in-process on the shipped and rich repositories (rendered, built with the real kustomize).

Found by mutation testing (`make mutation`): a misspelt field of a claim or Service, a wrong
apiVersion, an unlabelled metrics Service or a header naming no source passed every
in-process test, because `trainops validate` on the rendered tree only ran in subprocesses.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.repos import REPOS
from tests.tools import copy_inputs, require_kustomize, session_scratch
from trainops.core.findings import Severity
from trainops.jobspec.load import load_repository
from trainops.render import render_repository
from trainops.render.alerts import prometheus_rules
from trainops.rules import RULES_BY_SLUG
from trainops.validate.repo import validate_repository

# Documented names, spelled out (not imported): the operator's pod label
# (https://www.kubeflow.org/docs/components/trainer/legacy-v1/), our metrics label.
OPERATOR_JOB_LABEL = "training.kubeflow.org/job-name"
JOB_LABEL = "trainops.dev/job"
# Trainer v2 runs a TrainJob as a JobSet, whose pods carry its name (jobset.sigs.k8s.io docs).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# Where each Kubeflow kind keeps its replica specs (the CRDs).
KUBEFLOW_REPLICA_KEYS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}


# Every training job kind trainops renders (Training Operator v1, MPI Operator, Trainer v2).
JOB_KINDS = frozenset({"PyTorchJob", "TFJob", "MPIJob", "TrainJob"})


@pytest.fixture(scope="module")
def validated() -> Any:
    """`validated(label)`: (loaded repository, `validate_repository` result) of a scratch copy.

    A fixture, not a module-level cache: mutmut forks its test runs from a process that ran
    the tests once, and a module-level cache would hand every mutant the unmutated result.
    """

    @functools.cache
    def get(label: str) -> tuple[Any, Any]:
        root = copy_inputs(REPOS[label], session_scratch(f"rendered-{label}-"))
        repo = load_repository(root)
        return repo, validate_repository(root, repo)

    return get


@pytest.mark.parametrize("label", sorted(REPOS))
def test_every_built_object_validates_against_its_schema(validated: Any, label: str) -> None:
    """README: rendered overlays pass `trainops validate`'s strict Kubernetes and CRD schemas
    and build: no schema or build error, every cluster built. (Policy findings are the rules'
    business: the rich fixture trips some on purpose.)"""
    require_kustomize()
    repo, result = validated(label)
    errors = [
        f"{f.file}: {f.rule}: {f.message}"
        for f in result.findings
        if f.severity is Severity.ERROR and f.rule not in RULES_BY_SLUG
    ]
    assert errors == []
    assert sorted(result.built) == sorted(repo.clusters)
    for cluster, objects in _built(validated, label).items():
        # Each job that targets the cluster is in its overlay, with its Service and monitor.
        wanted = sorted(j.name for j in repo.jobs if cluster in {t.cluster for t in j.targets})
        jobs = sorted(o["metadata"]["name"] for o in objects if o["kind"] in JOB_KINDS)
        assert jobs == wanted, cluster
        kinds = {o["kind"] for o in objects}
        assert {"Service", "ServiceMonitor"} <= kinds or not jobs


def _built(validated: Any, label: str) -> dict[str, list[dict[str, Any]]]:
    _, result = validated(label)
    return {c: [d for d in yaml.safe_load_all(text) if d] for c, text in result.built.items()}


@pytest.mark.parametrize("label", sorted(REPOS))
def test_metrics_are_wired_from_monitor_to_service_to_pods(validated: Any, label: str) -> None:
    """Prometheus Operator: a ServiceMonitor selects Services by label in its namespace and
    scrapes their endpoints' named port; the Service selects the job's pods by the label the
    Training Operator puts on each pod. A headless Service (clusterIP None): Prometheus scrapes
    every pod's endpoint, a virtual IP would only balance over them."""
    require_kustomize()
    wired = 0
    for cluster, objects in _built(validated, label).items():
        services = [o for o in objects if o["kind"] == "Service"]
        monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
        jobs = [
            o for o in objects if o["kind"] in JOB_KINDS and not _executable_ranks(o, REPOS[label])
        ]
        assert len(monitors) == len(jobs) == len(services), cluster
        wired += len(jobs)
        for monitor in monitors:
            assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
            wanted = monitor["spec"]["selector"]["matchLabels"]
            (service,) = [
                s
                for s in services
                if wanted.items() <= s["metadata"]["labels"].items()
                and s["metadata"]["namespace"] == monitor["metadata"]["namespace"]
            ]
            assert service["apiVersion"] == "v1"
            assert service["spec"]["clusterIP"] == "None"
            port_names = {p["name"] for p in service["spec"]["ports"]}
            assert {e["port"] for e in monitor["spec"]["endpoints"]} <= port_names
            (job,) = [j for j in jobs if j["metadata"]["name"] == wanted[JOB_LABEL]]
            name = job["metadata"]["name"]
            if job["kind"] == "TrainJob":
                # Trainer v2 runs the job as a JobSet; its pods carry the JobSet's name (the
                # metrics port is declared by the runtime's node container, checked there).
                assert service["spec"]["selector"] == {JOBSET_NAME_LABEL: name}
                continue
            assert service["spec"]["selector"] == {OPERATOR_JOB_LABEL: name}
            serving = 0
            for replica in job["spec"][KUBEFLOW_REPLICA_KEYS[job["kind"]]].values():
                (container,) = replica["template"]["spec"]["containers"]
                if "ports" not in container:
                    continue  # an MPI Launcher only starts mpirun: no metrics of its own
                serving += 1
                declared = {p["name"]: p["containerPort"] for p in container["ports"]}
                for port in service["spec"]["ports"]:
                    assert declared[port["targetPort"]] == port["port"], port
            assert serving, name
    assert wired > 0


def _executable_ranks(job: dict[str, Any], root: Path) -> bool:
    """Whether the built job's spec file says its MPI ranks are no python program
    (`mpi.rankProgram: executable`), read from the file its `trainops.dev/source` names."""
    source = job["metadata"].get("annotations", {}).get("trainops.dev/source", "")
    spec = yaml.safe_load((root / source).read_text()) if source.startswith("jobs/") else {}
    return bool((spec.get("mpi") or {}).get("rankProgram") == "executable")


def test_executable_ranks_get_no_trainer_metrics(validated: Any) -> None:
    """Issue 26: ranks of `mpi.rankProgram: executable` (nccl-tests' all_reduce_perf) serve
    no trainer metrics, so nothing may point Prometheus at them: no TRAINOPS_METRICS_PORT in
    any container (nor exported by mpirun), no metrics containerPort, no metrics Service or
    ServiceMonitor (Prometheus would scrape a closed port: `up == 0` for the whole run), no
    monitoring ingress in the NetworkPolicy, and no training alerts for a namespace holding
    only such jobs (they would judge a gauge nobody exports)."""
    require_kustomize()
    seen = 0
    for cluster, objects in _built(validated, "rich").items():
        for job in (
            o for o in objects if o["kind"] == "MPIJob" and _executable_ranks(o, REPOS["rich"])
        ):
            seen += 1
            name = job["metadata"]["name"]
            for replica in job["spec"]["mpiReplicaSpecs"].values():
                (container,) = replica["template"]["spec"]["containers"]
                assert "ports" not in container, (cluster, name)
                env = {e["name"] for e in container.get("env", [])}
                assert "TRAINOPS_METRICS_PORT" not in env
                assert "TRAINOPS_METRICS_PORT" not in container.get("args", [])
            mine = [o for o in objects if o["metadata"].get("labels", {}).get(JOB_LABEL) == name]
            assert {o["kind"] for o in mine} == {"MPIJob", "NetworkPolicy"}, (cluster, name)
            (policy,) = (o for o in mine if o["kind"] == "NetworkPolicy")
            assert all("ports" not in rule for rule in policy["spec"]["ingress"])
    assert seen, "the rich fixture has an executable-ranks MPIJob (nccl-tests)"
    repo, _ = validated("rich")
    executable = [j for j in repo.jobs if j.name == "nccl-tests"]
    for cluster in repo.clusters.values():
        assert prometheus_rules(cluster, executable) == [], cluster.name


def _expected_source(path: str, repo: Any) -> str:
    """docs/development.md: `# Generated by trainops from <source> — do not edit.`, where the
    source is what to edit instead: the job spec, the job spec and the cluster profile, or the
    cluster profiles and trainops.yaml."""
    jobs = {j.name: j.file for j in repo.jobs}
    clusters = {c.name: c.file for c in repo.clusters.values()}
    parts = path.split("/")
    if parts[0] == "overlays" and parts[2] == "platform":
        # A platform manifest names its own file; their kustomization the directory.
        manifests = f"clusters/{parts[1]}/manifests/"
        if parts[3] == "kustomization.yaml":
            return manifests
        stem = parts[3].rsplit(".", 1)[0]
        sources = {i.file for i in repo.platform.get(parts[1], ())}
        (source,) = [f for f in sources if f.rsplit("/", 1)[1].rsplit(".", 1)[0] == stem]
        return str(source)
    if parts[0] == "overlays" and parts[2] in {"_runtimes", "_platform", "_jobs", "_monitoring"}:
        # The ClusterTrainingRuntimes come from the profile; so do the split in two parts and
        # the alerts and dashboard (its `monitoring:` settings).
        return clusters[parts[1]]
    if parts[:2] == ["gitops", "monitoring"]:
        # kube-state-metrics' values follow the profile (its operator, its alerts).
        return clusters[parts[2].rsplit(".", 1)[0]]
    if parts[0] == "base":
        return jobs[parts[1]]
    if parts[0] == "overlays" and len(parts) == 3:
        return clusters[parts[1]]
    if parts[0] == "overlays":
        return f"{jobs[parts[2]]} and {clusters[parts[1]]}"
    return "clusters/ and trainops.yaml"


@pytest.mark.parametrize("label", sorted(REPOS))
def test_every_generated_file_names_its_source(validated: Any, label: str) -> None:
    repo, _ = validated(label)
    files = render_repository(repo)
    assert files
    for path, text in files.items():
        first = text.splitlines()[0]
        match = re.fullmatch(r"# Generated by trainops from (.+) — do not edit\.", first)
        assert match, f"{path}: {first}"
        assert match.group(1) == _expected_source(path, repo), path
        source = match.group(1).split(" and ")[0]
        if not source.endswith("/"):
            assert source.endswith((".yaml", ".yml")), path
