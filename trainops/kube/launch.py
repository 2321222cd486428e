"""Read a container's argv the way its launcher will: torchrun, torch.distributed.launch,
the `deepspeed` launcher, mpirun, plain python, and `sh -c "..."` scripts.

The result is a list of `Launch`es (a shell script may run several commands):
the launcher's own options, normalised (`--nproc-per-node` and `--nproc_per_node`
are one key, `nproc_per_node`), and the training program's options, each value
with the path of the argv element it came from (for the finding's line).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from trainops.core.manifest import FieldPath as Path
from trainops.kube.pods import Container
from trainops.kube.words import (
    assignments,
    commands,
    expand_kubelet,
    expand_shell,
    kubelet_env,
    line_words,
    script_lines,
)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
PYTHONS = re.compile(r"^python(\d+(\.\d+)?)?$")
MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "mpiexec.hydra", "horovodrun"})

# torchrun options that take no value (everything else does, as `--opt v` or `--opt=v`).
# https://pytorch.org/docs/stable/elastic/run.html
TORCHRUN_FLAGS = frozenset(
    {"standalone", "no_python", "run_path", "module", "m", "use_env", "log_line_prefix_template"}
)
# deepspeed launcher options that take no value.
# https://www.deepspeed.ai/getting-started/#launching-deepspeed-training
DEEPSPEED_FLAGS = frozenset(
    {
        "no_python",
        "module",
        "no_local_rank",
        "no_ssh_check",
        "force_multi",
        "save_pid",
        "bind_cores_to_rank",
        "enable_each_rank_log",
        "autotuning",
        "elastic_training",
        "no_ssh",
    }
)

# mpirun options that take two words. Open MPI: MCA parameters, `--mca <key> <value>` and
# `--gmca` (4.x), plus `--prtemca`, `--pmixmca` and `--omca` (5.x, PRRTE). MPICH and Intel MPI
# (Hydra): `-genv <name> <value>` (every rank) and `-env <name> <value>` (one argument set).
# Every other valued option takes one word (`--map-by ppr:8:node`, `-bind-to none`, `-H h1,h2`).
# https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html
# https://www.open-mpi.org/doc/v4.1/man1/mpirun.1.php
# https://www.intel.com/content/www/us/en/docs/mpi-library/developer-reference-linux/2021-14/global-hydra-options.html
MPI_TWO_VALUES = frozenset({"mca", "gmca", "prtemca", "pmixmca", "omca", "genv", "env"})
MPI_ENV_OPTIONS = frozenset({"genv", "env"})
# mpirun / mpiexec / horovodrun options that take no value (normalised keys): without this
# table `mpirun --report-bindings python train.py` would read `python` as the option's value.
MPI_FLAGS = frozenset(
    {
        # Open MPI 4.x (ORTE) and 5.x (PRRTE)
        "allow_run_as_root", "oversubscribe", "nooversubscribe", "nolocal", "noprefix",
        "tag_output", "timestamp_output", "merge_stderr_to_stdout", "xml", "q", "quiet",
        "v", "verbose", "V", "version", "d", "debug", "debug_devel", "debug_daemons",
        "debug_daemons_file", "display_map", "display_devel_map", "display_diffable_map",
        "display_allocation", "display_devel_allocation", "report_bindings",
        "report_child_jobs_separately", "leave_session_attached", "do_not_launch",
        "do_not_resolve", "enable_recovery", "disable_recovery", "hetero_nodes", "hetero_apps",
        "use_hwthread_cpus", "use_regexp", "show_progress", "wait_for_server", "continuous",
        "novm", "preload_binary", "index_argv_by_rank", "bind_to_core", "bind_to_socket",
        "bynode", "byslot", "bycore", "bysocket", "get_stack_traces", "report_state_on_timeout",
        "no_ready_msg", "daemonize",
        # MPICH / Intel MPI Hydra
        "genvall", "genvnone", "envall", "envnone", "l", "prepend_rank", "info",
        "print_all_exitcodes", "disable_auto_cleanup", "enable_x", "disable_x",
        "ordered_output", "rr", "print_rank_map", "silent_abort",
        # horovodrun
        "gloo", "mpi", "jsrun", "disable_cache", "check_build", "cb", "autotune", "tcp",
        "hierarchical_allreduce", "no_hierarchical_allreduce", "hierarchical_allgather",
        "no_hierarchical_allgather", "timeline_mark_cycles", "no_stall_check",
        "log_without_timestamp", "log_hide_timestamp",
    }
)  # fmt: skip

TORCHRUN = "torchrun"
LEGACY_LAUNCH = "torch.distributed.launch"
DEEPSPEED = "deepspeed"
MPI = "mpi"
PYTHON = "python"
OTHER = "other"
DISTRIBUTED_LAUNCHERS = frozenset({TORCHRUN, LEGACY_LAUNCH, DEEPSPEED, MPI})
# Trainers that launch their own distributed processes, beside the launchers `classify`
# parses: Hugging Face `accelerate launch`, MosaicML `composer`, torchtune's `tune run`,
# LLaMA-Factory's `llamafactory-cli train`.
TRAINERS = frozenset({"accelerate", "composer", "tune", "llamafactory-cli"})


def option_key(word: str) -> str:
    """`--nproc-per-node` -> `nproc_per_node`."""
    return word.lstrip("-").replace("-", "_")


@dataclass
class Launch:
    """One command a container runs."""

    tool: str
    """`torchrun` (incl. `python -m torch.distributed.run`), `torch.distributed.launch`,
    `deepspeed`, `mpi`, `python`, or `other`."""
    words: list[tuple[str, Path]]
    options: dict[str, tuple[str, Path]] = field(default_factory=dict)
    """The launcher's options (normalised keys; flags have value ``)."""
    program: list[tuple[str, Path]] = field(default_factory=list)
    """The training program and its arguments."""
    mpi_exports: dict[str, tuple[str, Path]] = field(default_factory=dict)
    """Env mpirun sets in every rank: `-x NAME=VALUE`, Hydra's `-genv`/`-env NAME VALUE`, and
    `-x NAME` with the value the launching shell has (container env or an earlier `export`)."""
    mpi_inherited: dict[str, Path] = field(default_factory=dict)
    """`-x NAME` without a value: the rank gets the launcher's own value of NAME."""
    mpi_options: list[tuple[str, list[str], Path]] = field(default_factory=list)
    """mpirun's options in order, as written: (the option word, its values, its path)."""

    def option(self, *keys: str) -> tuple[str, Path] | None:
        for key in keys:
            if key in self.options:
                return self.options[key]
        return None

    @property
    def program_options(self) -> dict[str, tuple[str, Path]]:
        return parse_program_options(self.program[1:] if self.program else [])


def parse_program_options(words: list[tuple[str, Path]]) -> dict[str, tuple[str, Path]]:
    """`--key=value`, `--key value` and bare `--flag` (value ``) of a training program."""
    result: dict[str, tuple[str, Path]] = {}
    i = 0
    while i < len(words):
        word, path = words[i]
        if word.startswith("--") and len(word) > 2:
            if "=" in word:
                key, _, value = word.partition("=")
                result[option_key(key)] = (value, path)
            elif i + 1 < len(words) and not words[i + 1][0].startswith("-"):
                result[option_key(word)] = (words[i + 1][0], words[i + 1][1])
                i += 1
            else:
                result[option_key(word)] = ("", path)
        i += 1
    return result


def _parse_launcher(
    words: list[tuple[str, Path]], flags: frozenset[str]
) -> tuple[dict[str, tuple[str, Path]], list[tuple[str, Path]]]:
    """Options up to the first positional word (the script), then the program."""
    options: dict[str, tuple[str, Path]] = {}
    i = 0
    while i < len(words):
        word, path = words[i]
        if not word.startswith("-") or word == "-":
            break
        if "=" in word:
            key, _, value = word.partition("=")
            options[option_key(key)] = (value, path)
        elif option_key(word) in flags:
            options[option_key(word)] = ("", path)
            if option_key(word) in {"m", "module"}:
                i += 1
                break
        elif i + 1 < len(words):
            options[option_key(word)] = (words[i + 1][0], words[i + 1][1])
            i += 1
        i += 1
    return options, words[i:]


def mpi_arity(word: str, following: str | None) -> int:
    """How many words after `word` (an mpirun/mpiexec/horovodrun option) are its values: two
    for MCA parameters and Hydra's `-genv`/`-env`, none for a flag (`MPI_FLAGS`), an
    `--opt=value` word or an option followed by another option, else one."""
    key = option_key(word)
    if key in MPI_TWO_VALUES:
        return 2
    if "=" in word or key in MPI_FLAGS or following is None or following.startswith("-"):
        return 0
    return 1


def _parse_mpi(launch: Launch) -> None:
    """mpirun/mpiexec/horovodrun options up to the program, in order (`mpi_options`): `-np`,
    the env it exports to the ranks (`-x`, `-genv`, `-env`), MCA parameters, and every other
    option with its value."""
    words = launch.words[1:]
    i = 0
    while i < len(words):
        word, path = words[i]
        if not word.startswith("-") or word == "-":
            launch.program = words[i:]
            return
        arity = mpi_arity(word, words[i + 1][0] if i + 1 < len(words) else None)
        values = words[i + 1 : i + 1 + arity]
        launch.mpi_options.append((word, [v for v, _ in values], path))
        _read_mpi_option(launch, word, values, path)
        i += 1 + len(values)


def _read_mpi_option(launch: Launch, word: str, values: list[tuple[str, Path]], path: Path) -> None:
    """One option into `options` (normalised keys), `mpi_exports` and `mpi_inherited`."""
    raw = word.lstrip("-")
    key = option_key(raw)
    if key in MPI_TWO_VALUES and len(values) == 2:
        name, (value, value_path) = values[0][0], values[1]
        if key in MPI_ENV_OPTIONS:
            launch.mpi_exports[name] = (value, value_path)
        else:
            launch.options[f"{key}:{name}"] = (value, value_path)
    elif key in {"np", "n", "c", "num_proc"} and values:  # num_proc: horovodrun
        launch.options["np"] = values[0]
    elif key == "x" and values:
        name, eq, value = values[0][0].partition("=")
        if eq:
            launch.mpi_exports[name] = (value, values[0][1])
        else:
            launch.mpi_inherited[name] = values[0][1]
    elif "=" in raw:
        k, _, v = raw.partition("=")
        launch.options[option_key(k)] = (v, path)
    else:
        launch.options[key] = values[0] if values else ("", path)


# Launchers, by executable or `python -m` module, and the flag table each one parses with.
LAUNCHER_EXECUTABLES = {"torchrun": TORCHRUN, "deepspeed": DEEPSPEED}
LAUNCHER_MODULES = {
    "torch.distributed.run": TORCHRUN,
    "torch.distributed.launch": LEGACY_LAUNCH,
    "deepspeed.launcher.runner": DEEPSPEED,
}
LAUNCHER_FLAGS = {
    TORCHRUN: TORCHRUN_FLAGS,
    LEGACY_LAUNCH: TORCHRUN_FLAGS,
    DEEPSPEED: DEEPSPEED_FLAGS,
}


def _launcher(kind: str, words: list[tuple[str, Path]], args: list[tuple[str, Path]]) -> Launch:
    launch = Launch(kind, words)
    launch.options, launch.program = _parse_launcher(args, LAUNCHER_FLAGS[kind])
    return launch


def classify(words: list[tuple[str, Path]]) -> Launch:
    """What one command launches."""
    # Skip `env`, `exec` and leading `NAME=value` assignments.
    while words and (
        words[0][0] in {"env", "exec"} or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0][0])
    ):
        words = words[1:]
    if not words:
        return Launch(OTHER, words)
    head = posixpath.basename(words[0][0])
    rest = words[1:]
    if head in LAUNCHER_EXECUTABLES:
        return _launcher(LAUNCHER_EXECUTABLES[head], words, rest)
    if head in MPI_LAUNCHERS:
        launch = Launch(MPI, words)
        _parse_mpi(launch)
        return launch
    if PYTHONS.match(head):
        i = 0
        while i < len(rest) and rest[i][0].startswith("-") and rest[i][0] != "-m":
            i += 1  # interpreter flags such as -u
        if i + 1 < len(rest) and rest[i][0] == "-m":
            module = rest[i + 1][0]
            if module in LAUNCHER_MODULES:
                return _launcher(LAUNCHER_MODULES[module], words, rest[i + 2 :])
            return Launch(PYTHON, words, program=rest[i + 1 :])
        return Launch(PYTHON, words, program=rest[i:])
    return Launch(OTHER, words, program=words)


def trains(launch: Launch) -> bool:
    """Whether the command starts distributed training: a launcher (torchrun, deepspeed,
    mpirun, horovodrun) or a known trainer."""
    if launch.tool in DISTRIBUTED_LAUNCHERS:
        return True
    return bool(launch.words) and posixpath.basename(launch.words[0][0]) in TRAINERS


def shell_script(argv: list[tuple[str, Path]]) -> tuple[str, Path] | None:
    """The script of `sh -c "..."` (also `bash -lc`, `/bin/sh -ec`)."""
    if len(argv) < 3 or posixpath.basename(argv[0][0]) not in SHELLS:
        return None
    for i, (word, _) in enumerate(argv[1:], start=1):
        if word.startswith("-") and "c" in word and i + 1 < len(argv):
            return argv[i + 1]
        if not word.startswith("-"):
            return None
    return None


def launches(container: Container) -> list[Launch]:
    """Every command the container runs, in order (read once per container)."""
    found = container.memo.get("launches")
    if found is None:
        found = container.memo["launches"] = _launches(container)
    return found  # type: ignore[no-any-return]


def _launches(container: Container) -> list[Launch]:
    """Each command of the argv as the kubelet and the shell hand it over: `$(VAR)` expanded
    from the container's env, and in an `sh -c` script `$VAR`/`${VAR}` from the shell's
    variables at that line (the env, then the script's assignments and exports)."""
    env = kubelet_env([(name, var.value) for name, var in container.env.items()])
    argv = [(expand_kubelet(word, env), path) for word, path in container.argv]
    if not argv:
        return []
    script = shell_script(argv)
    if script is None:
        launch = classify(list(argv))
        _inherit(launch, env)
        return [launch]
    text, path = script
    shell = dict(env)
    result = []
    for line in script_lines(text):
        for words, _ in commands(line_words(expand_shell(line, shell))):
            launch = classify([(w, path) for w in words])
            _inherit(launch, shell)
            result.append(launch)
            shell.update(assignments(words))
    return result


def _inherit(launch: Launch, shell: dict[str, str]) -> None:
    """Give `mpirun -x NAME` the value the launching shell has: the container's env, overridden
    by the script's assignments before it. Unknown values stay unexported."""
    for name, path in launch.mpi_inherited.items():
        if name in shell and name not in launch.mpi_exports:
            launch.mpi_exports[name] = (shell[name], path)


def is_shell_script(container: Container, index: int) -> bool:
    """Whether argv element `index` is the script of `sh -c`."""
    script = shell_script(container.argv)
    return script is not None and script[1] == container.argv[index][1]
