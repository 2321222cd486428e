"""What run-local may run on the reviewer's machine, and with which environment (issue 35.7).

run-local runs a job's containers as local processes, as whoever runs it: a reviewer trying a
pull request. Our trainer (`python -m trainer`, alone or under torchrun or mpirun, from the
trainer image) is the program run-local exists for. Anything else the job names — another
image's command, or the trainer image's `python -m timeit -s ...` — is the pull request's
code: a job ran `python -m timeit -s '<anything>'` with the reviewer's environment (cloud
keys, kubeconfig, tokens). So run-local says what it would run and refuses it, unless
`--allow-any-program`; then it runs it with a clean environment: the pod's own variables and
the few a process needs to start (`CLEAN_ENV`), none of the reviewer's credentials.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from trainops.core.errors import InputError, Problem
from trainops.runlocal.adapt import image_is_ours

# `python`, `python3`, `python3.11`, as a name or a path (an MPI Launcher's program).
PYTHON = re.compile(r"python(3(\.\d+)?)?")
# Variables another program gets from this machine: where programs are, the locale and the
# terminal. Nothing that names a credential or a cluster (AWS_*, KUBECONFIG, GITHUB_TOKEN,
# SSH_AUTH_SOCK, ...); HOME and TMPDIR come from the pod (its emptyDirs, made local).
CLEAN_ENV = frozenset({"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM"})
# torchrun's options that take a value as the next word (`--nnodes 2`); the rest are flags
# or `--option=value`.
_TORCHRUN_VALUES = frozenset({
    "--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend", "--rdzv_backend",
    "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--rdzv-conf",
    "--rdzv_conf", "--max-restarts", "--max_restarts", "--monitor-interval",
    "--monitor_interval", "--start-method", "--start_method", "--role", "--node-rank",
    "--node_rank", "--master-addr", "--master_addr", "--master-port", "--master_port",
    "--local-addr", "--local_addr", "--log-dir", "--log_dir", "-r", "--redirects", "-t",
    "--tee", "--local-ranks-filter", "--local_ranks_filter", "--logs-specs", "--logs_specs",
})  # fmt: skip


def _after_torchrun_options(argv: Sequence[str]) -> Sequence[str]:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in {"-m", "--module"}:
        if argv[i] in {"--no-python", "--no_python", "--run-path", "--run_path"}:
            return []  # the program is not run as a Python module
        i += 2 if argv[i] in _TORCHRUN_VALUES else 1
    return argv[i:]


def runs_trainer(image: str, argv: Sequence[str]) -> bool:
    """Whether a container of `image` running `argv` (command + args) runs our trainer: the
    trainer image, and `python -m trainer ...` or torchrun's options then `-m trainer ...`."""
    if not image_is_ours(image)[0] or not argv:
        return False
    if PYTHON.fullmatch(PurePath(argv[0]).name):
        return list(argv[1:3]) == ["-m", "trainer"]
    if argv[0] == "torchrun":
        return list(_after_torchrun_options(argv)[:2]) in (["-m", "trainer"],
                                                           ["--module", "trainer"])  # fmt: skip
    return False


def admit(image: str, argv: Sequence[str], source: str, allow_any: bool, notes: list[str]) -> bool:
    """True when `argv` runs our trainer. Another program is refused (InputError naming it)
    unless `allow_any`; then a note says what will run, and False (a clean environment)."""
    if runs_trainer(image, argv):
        return True
    shown = shlex.join(argv)
    shown = shown if len(shown) <= 300 else shown[:300] + " ..."
    if not allow_any:
        raise InputError(
            Problem.whole_file(
                source,
                f"this job runs `{shown}` (image {image}), not the trainops trainer (`python -m"
                " trainer` or `torchrun ... -m trainer`, image trainops-trainer): run-local would"
                " run it on this machine as you. Read what it runs; pass --allow-any-program to"
                " run it with a clean environment (none of your credentials)",
            )
        )
    notes.append(
        f"will run `{shown}` (image {image}: not the trainops trainer) with a clean environment:"
        f" the pod's variables and {', '.join(sorted(CLEAN_ENV))} only"
    )
    return False


def clean_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default: this process's) another program may see."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k in CLEAN_ENV}
