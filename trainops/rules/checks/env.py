"""Env rules: `$(VAR)` references nobody defines, and secrets written in plain text."""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import is_placeholder
from trainops.facts import torch_env
from trainops.facts.kubeflow import operator_env_names
from trainops.facts.workloads import LWS_ENV, LWS_GROUP
from trainops.kube.launch import OTHER, SHELLS, launches
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

# `$(VAR)` as the kubelet expands it in command/args; `$$(VAR)` is the escape for a literal.
# https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# A shell's `${VAR}` / `$VAR`: without a shell in the command nothing expands them.
_SHELL_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)\b")
# Service links the kubelet adds (`<SVC>_SERVICE_HOST`, `<SVC>_PORT_80_TCP_ADDR`, ...).
_SERVICE_LINK = re.compile(
    r"_SERVICE_HOST$|_SERVICE_PORT(_\w+)?$|_PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?$"
)

# The Job controller's env in the pods of Indexed Jobs (JobSet's Jobs are Indexed by default).
# https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode
COMPLETION_INDEX = "JOB_COMPLETION_INDEX"

_SECRET_WORDS = frozenset({"TOKEN", "PASSWORD", "PASSWD", "SECRET", "CREDENTIAL", "CREDENTIALS"})
_SECRET_PAIRS = frozenset(
    {("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY")}
)
_APIKEY = frozenset({"APIKEY", "ACCESSKEY", "AUTHTOKEN"})
# A last word that makes the variable a location, not the secret: `PASSWORD_FILE`,
# `HF_TOKEN_PATH`, `SECRETS_DIR` hold where a secret is mounted (the `_FILE` convention of
# official images), and a path to a secret is not a secret.
_LOCATION_WORDS = frozenset(
    {"FILE", "FILES", "FILENAME", "PATH", "PATHS", "DIR", "DIRS", "DIRECTORY", "LOCATION", "MOUNT"}
)
# Names that say secret but conventionally hold a file path.
# https://cloud.google.com/docs/authentication/application-default-credentials
_PATH_VALUED = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})


def says_secret(name: str) -> bool:
    """`HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `WANDB_API_KEY` yes; `TOKENIZERS_PARALLELISM`,
    `PASSWORD_FILE`, `HF_TOKEN_PATH` no."""
    upper = name.upper()
    parts = upper.split("_")
    if parts[-1] in _LOCATION_WORDS or upper in _PATH_VALUED:
        return False
    if any(p in _SECRET_WORDS or p in _APIKEY for p in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def _references(text: str) -> list[str]:
    return _REFERENCE.findall(text.replace("$$", "\x00"))


def _injected(obj: Object) -> frozenset[str] | None:
    """The variables the object's controller gives its pods; None when we cannot know them."""
    if obj.is_kubeflow_job:
        return operator_env_names(obj.kind, obj.spec)
    if obj.is_volcano_job:
        return None  # Volcano's env/svc plugins inject variables we do not model
    if obj.is_indexed_job or obj.is_jobset:
        return frozenset({COMPLETION_INDEX})
    if obj.group == LWS_GROUP:
        return LWS_ENV
    return frozenset()


def _shell_syntax(obj: Object) -> Iterator[Violation]:
    """`${VAR}` or `$VAR` in the argv of a container whose own command is no shell: the
    kubelet expands `$(VAR)` only, so the process gets the text (`--batch-size=${BS}`)."""
    for pod in obj.pods:
        for c in pod.containers(init=True):
            argv = c.argv
            if not c.data.get("command") or any(
                posixpath.basename(word) in SHELLS for word, _ in argv[:2]
            ):
                continue  # the image's entrypoint, or a shell, may expand them
            for word, path in argv:
                for braced, bare in _SHELL_REFERENCE.findall(word.replace("$$", "\x00")):
                    name = braced or bare
                    yield Violation(
                        f"container `{c.name}` passes `{word}`: no shell runs its command, and"
                        f" Kubernetes expands `$({name})` only, so the process receives the"
                        f" literal text; write `$({name})`",
                        path,
                    )


def _undefined(obj: Object, ctx: Context) -> Iterator[Violation]:
    injected = _injected(obj)
    if injected is None:
        return
    yield from _shell_syntax(obj)
    for pod in obj.pods:
        for c in pod.containers(init=True):
            if c.has_env_from:
                continue  # names from a ConfigMap/Secret we may not see
            defined = set(c.env) | (set() if c.init else set(injected))
            for word, path in c.argv:
                for name in _references(word):
                    if name in defined or _SERVICE_LINK.search(name):
                        continue
                    shape = f"{obj.kind}" + (
                        f" with replicas {'/'.join(p.replica_type or '' for p in obj.pods)}"
                        if obj.is_kubeflow_job
                        else ""
                    )
                    shape = ("an elastic " if obj.elastic_policy is not None else "a ") + shape
                    hint = ""
                    if name == "MASTER_ADDR" and obj.kind == "PyTorchJob":
                        hint = (
                            "; an elastic Worker-only job rendezvouses at PET_RDZV_ENDPOINT"
                            " (torchrun reads it itself: drop --rdzv_endpoint)"
                            if obj.elastic_policy is not None
                            else "; add a Master replica, or let torchrun read PET_* itself"
                        )
                    yield Violation(
                        f"container `{c.name}` uses $({name}) but neither its env nor the"
                        f" Training Operator defines it for {shape}: the process receives the"
                        f" literal text `$({name})`{hint}",
                        path,
                    )


# Values that switch something on or off (`RAY_ENABLE_K8S_TOKEN_AUTH: "true"`): no credential.
_SWITCH_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "0", "1"})


def _literal_secret(name: str, value: str) -> bool:
    """A secret-named variable given its value in the manifest (not a `$(VAR)` reference, a
    template's placeholder, or an on/off switch)."""
    return (
        bool(value)
        and says_secret(name)
        and not _REFERENCE.fullmatch(value)
        and not is_placeholder(value)
        and value.strip().lower() not in _SWITCH_VALUES
    )


def _plain_secret(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for c in pod.containers(init=True):
            for var in c.env.values():
                if var.value and _literal_secret(var.name, var.value):
                    yield Violation(
                        f"container `{c.name}` sets {var.name} to a literal value: anyone who"
                        " can read the manifest (and Git history) has it",
                        var.path,
                    )
            for launch in launches(c):
                for name, (value, path) in launch.mpi_exports.items():
                    if _literal_secret(name, value):
                        yield Violation(
                            f"mpirun exports {name} with a literal value in the command line",
                            path,
                        )


def _exported(obj: Object) -> Iterator[tuple[str, Path]]:
    """Each variable a training pod's containers set: `env`, a script's `export NAME=...`,
    and what mpirun exports to its ranks."""
    for pod in obj.training_pods:
        for c in pod.containers(init=True):
            for var in c.env.values():
                yield var.name, var.path
            for launch in launches(c):
                yield from ((name, path) for name, (_, path) in launch.mpi_exports.items())
                if launch.tool == OTHER and launch.words and launch.words[0][0] == "export":
                    for word, path in launch.words[1:]:
                        yield word.partition("=")[0], path


def _torch_unknown(obj: Object, ctx: Context) -> Iterator[Violation]:
    seen: set[tuple[str, Path]] = set()
    for name, path in _exported(obj):
        why = torch_env.unknown(name)
        if why is not None and (name, path) not in seen:
            seen.add((name, path))
            yield Violation(why, path)


RULES = (
    Rule(
        slug="env-reference-undefined",
        code="TO301",
        severity=Severity.ERROR,
        summary="A `$(VAR)` in command or args that neither the container's env nor the"
        " Training Operator defines for this job's shape; a shell's `${VAR}` or `$VAR` where"
        " the container's command is no shell (nothing expands it).",
        why="Kubernetes leaves an undefined `$(VAR)` as literal text, so the program gets"
        " `$(MASTER_ADDR):29500` as an address and fails (or hangs) at rendezvous. The"
        " operator sets MASTER_ADDR only when the job has a Master replica.",
        fix="Define the variable in `env`, or rely on what the operator sets for this shape"
        " (PET_RDZV_ENDPOINT and PET_NNODES for elastic jobs, which torchrun reads itself).",
        example="elasticPolicy: {minReplicas: 2, maxReplicas: 4}\n"
        "pytorchReplicaSpecs: {Worker: ...}\n"
        "command: [torchrun, --rdzv_endpoint=$(MASTER_ADDR):29500, train.py]",
        check=_undefined,
        references=(
            "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/#use-environment-variables-to-define-arguments",
            "https://github.com/kubeflow/trainer/blob/release-1.9/pkg/controller.v1/pytorch/envvar.go",
        ),
    ),
    Rule(
        slug="secret-in-plain-env",
        code="TO302",
        severity=Severity.ERROR,
        summary="An env var whose name says secret (TOKEN, PASSWORD, SECRET, API_KEY,"
        " ACCESS_KEY, ...) with a literal value instead of a secretKeyRef (names ending in"
        " _FILE, _PATH, _DIR, ... hold a path to a secret and are exempt, and so are a template"
        " placeholder such as `${HF_TOKEN}` or `PLACEHOLDER_HF_TOKEN`, filled in before apply,"
        " and an on/off value such as `true`).",
        why="A literal in a manifest lives in Git history, in `kubectl get -o yaml` and in every"
        " rendered diff.",
        fix="Store it in a Secret and use `valueFrom.secretKeyRef`.",
        example="env:\n- {name: HF_TOKEN, value: hf_abc123}",
        check=_plain_secret,
        pods_only=True,
    ),
    Rule(
        slug="torch-env-unknown",
        code="TO308",
        severity=Severity.WARNING,
        summary="A training pod sets a `TORCH_*` or `PYTORCH_*` variable that torch never"
        " reads (no such name anywhere in torch 2.13): a misspelling or a setting that does"
        " not exist.",
        why="torch reads a variable only by its exact name, and ignores every other one"
        " silently: `PYTORCH_CUDA_ALOC_CONF` leaves the allocator at its default (and the"
        " job short of memory), `TORCH_DISTRIBUTED_TIMEOUT` sets no timeout at all (the"
        " collective timeout is `init_process_group(timeout=...)`, or TORCH_NCCL_* for the"
        " watchdog).",
        fix="Use the name torch reads (the finding suggests the closest), or drop it.",
        example="env:\n- {name: PYTORCH_CUDA_ALOC_CONF, value: expandable_segments:True}",
        check=_torch_unknown,
        pods_only=True,
        references=(
            "https://docs.pytorch.org/docs/stable/torch_environment_variables.html",
            "https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html",
        ),
    ),
)
