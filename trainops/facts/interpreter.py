"""Python's interpreter options in a job's `command`, and why torchrun cannot pass them.

trainops renders `[python, <options>, train.py]` as `torchrun <options> train.py`, and torchrun
(torch/distributed/run.py, `config_from_args`, torch 2.x) starts each worker as
`[sys.executable, "-u", ("-m",) training_script, *args]`: it has no way to pass interpreter
options, and its own parser stops the pod with `torchrun: error: unrecognized arguments: -u`.
Most options have an environment variable that does the same (Python's docs, "Command line
and environment"); `-u` needs nothing, as torchrun runs `python -u` already.
"""

from __future__ import annotations

from collections.abc import Sequence

# Options that take the next item as their value when written alone (`-W ignore`, `-X dev`).
_WITH_VALUE = frozenset({"-W", "-X", "-c"})
_ENV_FOR_LETTER = {
    "B": "PYTHONDONTWRITEBYTECODE=1",
    "d": "PYTHONDEBUG=1",
    "s": "PYTHONNOUSERSITE=1",
    "v": "PYTHONVERBOSE=1",
}
_ENV_FOR_X = {
    "dev": "PYTHONDEVMODE=1",
    "faulthandler": "PYTHONFAULTHANDLER=1",
    "importtime": "PYTHONPROFILEIMPORTTIME=1",
    "tracemalloc": "PYTHONTRACEMALLOC=1",
    "utf8": "PYTHONUTF8=1",
    "warn_default_encoding": "PYTHONWARNDEFAULTENCODING=1",
}


def interpreter_options(command: Sequence[str]) -> list[str]:
    """The options between `python` and the program (`-m` and what follows it excluded),
    each with its value when written apart: `[python, -u, -W, ignore, train.py]` ->
    `["-u", "-W ignore"]`."""
    found: list[str] = []
    i = 1
    while i < len(command) and command[i].startswith("-") and command[i] != "-m":
        option = command[i]
        if option in _WITH_VALUE and i + 1 < len(command):
            option = f"{option} {command[i + 1]}"
            i += 1
        found.append(option)
        i += 1
    return found


def instead(option: str) -> str:
    """What to write instead of one interpreter option under torchrun."""
    if option == "-u":
        return "remove -u: torchrun runs the program with python -u already"
    if option.startswith("-c"):
        return "torchrun runs a script or a module (-m), not -c code: put the code in a file"
    if option.startswith("-m"):
        return f"write -m and the module as two items ({option!r} is one)"
    if option.startswith("-W"):
        value = option[2:].strip()
        return f"set env PYTHONWARNINGS={value or '<action>'} instead of {option}"
    if option.startswith("-X"):
        name = option[2:].strip().split("=", 1)[0]
        env = _ENV_FOR_X.get(name, "the PYTHON* variable Python's docs name for it")
        return f"set env {env} instead of {option}"
    if option.startswith("-O"):
        return f"set env PYTHONOPTIMIZE={option.count('O')} instead of {option}"
    letters = option[1:].replace("u", "")  # -uB: torchrun's own -u covers the u
    envs = [_ENV_FOR_LETTER[c] for c in letters if c in _ENV_FOR_LETTER]
    if envs and len(envs) == len(letters):
        return f"set env {', '.join(envs)} instead of {option}"
    return f"remove {option}: torchrun passes no interpreter options"
