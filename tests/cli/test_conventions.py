"""The command line's habits, as kubectl and ruff users expect them (issue 34, item 4): `-o`
beside `--format` (yaml the json document), a did-you-mean for a misspelt command, shell
completion that a real bash runs, NO_COLOR and `--color`, whole-sentence help summaries, a
usage error that shows the command's own usage."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_kustomize, require_tool
from trainops.cli import COMMANDS, build_parser


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainops", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_o_is_format_and_yaml_is_the_json_document() -> None:
    long = _run("rules", "--format", "json")
    short = _run("rules", "-o", "json")
    assert long.returncode == short.returncode == 0
    assert short.stdout == long.stdout
    as_yaml = _run("rules", "-o", "yaml")
    assert as_yaml.returncode == 0
    assert not as_yaml.stdout.lstrip().startswith("{")
    assert yaml.safe_load(as_yaml.stdout) == json.loads(long.stdout)


def test_every_json_format_has_yaml_beside_it() -> None:
    for name in COMMANDS:
        parser = build_parser(name)
        sub = parser._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        for action in sub._actions:
            if "--format" in action.option_strings:
                assert "-o" in action.option_strings, name
                if "json" in (action.choices or ()):
                    assert "yaml" in action.choices, name


def test_a_misspelt_command_gets_did_you_mean() -> None:
    result = _run("valdate")
    assert result.returncode == 2
    assert "unknown command `valdate`; did you mean `validate`?" in result.stderr
    assert "Traceback" not in result.stderr
    far = _run("frobnicate")
    assert far.returncode == 2 and "did you mean" not in far.stderr


def test_a_usage_error_shows_the_commands_usage() -> None:
    result = _run("validate", "--bogus")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: trainops validate ")
    assert "trainops validate: error: unrecognized arguments: --bogus" in result.stderr


def test_help_summaries_are_whole_sentences() -> None:
    result = _run("--help")
    listed = re.findall(r"^    (\S+)\s+(.*(?:\n {10,}.*)*)", result.stdout, re.M)
    summaries = {name: " ".join(text.split()) for name, text in listed}
    assert set(summaries) == set(COMMANDS)
    for name, text in summaries.items():
        assert text.endswith("."), (name, text)
        module = Path(REPO, *COMMANDS[name].split(".")).with_suffix(".py")
        doc = ast.get_docstring(ast.parse(module.read_text())) or ""
        assert " ".join(doc.split()).startswith(text.replace("nccl- tests", "nccl-tests")), name


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_shells_code(shell: str) -> None:
    result = _run("completion", shell)
    assert result.returncode == 0, result.stderr
    assert "trainops" in result.stdout and "_ARGCOMPLETE" in result.stdout


def test_bash_completes_commands_and_options() -> None:
    """The real bash loads `trainops completion bash` and completes as a user's Tab does."""
    bash = require_tool("bash")
    bin_dir = Path(sys.executable).parent
    script = (
        'eval "$(trainops completion bash)"\n'
        "COMP_WORDS=(trainops val); COMP_CWORD=1; COMP_LINE='trainops val'; COMP_POINT=12\n"
        '_python_argcomplete trainops val trainops; echo "${COMPREPLY[@]}"\n'
        "COMP_WORDS=(trainops validate --unk); COMP_CWORD=2\n"
        "COMP_LINE='trainops validate --unk'; COMP_POINT=23\n"
        '_python_argcomplete trainops --unk validate; echo "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [bash, "-c", script], cwd=REPO, capture_output=True, text=True, env=env, check=False
    )
    assert result.stdout.split("\n")[:2] == ["validate ", "--unknown-kinds "], result.stderr


def _validate_text(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`validate` on a repository with one error, run under a pseudo-terminal (stdout a tty)."""
    code = (
        "import os, pty, sys\n"
        "pid, fd = pty.fork()\n"
        "if pid == 0:\n"
        "    os.execvp(sys.executable, [sys.executable, '-m', 'trainops', *sys.argv[1:]])\n"
        "out = b''\n"
        "while True:\n"
        "    try:\n"
        "        chunk = os.read(fd, 65536)\n"
        "    except OSError:\n"
        "        break\n"
        "    if not chunk:\n"
        "        break\n"
        "    out += chunk\n"
        "os.waitpid(pid, 0)\n"
        "sys.stdout.write(out.decode())\n"
    )
    argv = [sys.executable, "-c", code, "--root", str(root), "validate", "--quiet", *args]
    env = {**os.environ, **(env or {})}
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    return result.stdout


@pytest.fixture(scope="module")
def unpinned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_kustomize()
    root = copy_inputs(REPO, tmp_path_factory.mktemp("repo"))
    job = root / "jobs" / "resnet50-ddp.yaml"
    job.write_text(job.read_text().replace("trainops-trainer:0.1.0", "trainops-trainer:latest"))
    return root


def test_no_color_and_color_are_honoured_on_a_terminal(unpinned: Path) -> None:
    assert "\033[" in _validate_text(unpinned, env={"NO_COLOR": "", "TERM": "xterm"})
    assert "\033[" not in _validate_text(unpinned, env={"NO_COLOR": "1", "TERM": "xterm"})
    assert "\033[" not in _validate_text(unpinned, "--color", "never", env={"TERM": "xterm"})
    forced = _run("--root", str(unpinned), "validate", "--color", "always", "--quiet")
    assert "\033[31m" in forced.stdout
    assert "\033[" not in _run("--root", str(unpinned), "validate", "--quiet").stdout
