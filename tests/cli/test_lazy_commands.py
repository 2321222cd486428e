"""A command imports its own module only (trainops/cli/__init__.py `COMMANDS`): CI and the
tests start `python -m trainops` hundreds of times, and the modules of the other commands (the
cluster client, the importer, the report views) were a third of each start."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.tools import REPO
from trainops.cli import COMMANDS, _command, build_parser, main


def _imported_after(argv: list[str]) -> set[str]:
    """The trainops modules loaded after `main(argv)`, in a fresh interpreter."""
    code = (
        "import sys\n"
        "from trainops.cli import main\n"
        f"code = main({argv!r})\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('trainops'))))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_a_command_loads_no_other_commands_module() -> None:
    loaded = _imported_after(["rules"])
    assert "trainops.cli.rules" in loaded
    others = {module for name, module in COMMANDS.items() if name != "rules"}
    assert not loaded & others, loaded & others
    assert "trainops.cluster.client" not in loaded
    assert "trainops.importer" not in loaded


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["render"], "render"),
        (["--root", "x", "validate", "--cluster", "build"], "validate"),
        (["--root=x", "live-diff"], "live-diff"),
        (["--root", "render", "build"], "build"),
        (["--help"], None),
        (["--version"], None),
        (["-h", "render"], None),
        (["rendr"], None),
        ([], None),
    ],
)
def test_the_command_is_the_first_word_after_the_root_option(
    argv: list[str], command: str | None
) -> None:
    assert _command(argv) == command


def test_help_without_a_command_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listed = capsys.readouterr().out
    for name in COMMANDS:
        assert f"\n    {name} " in listed, name


def test_a_misspelt_command_is_a_usage_error_listing_the_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["rendr"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    # Issue 34: the nearest command, not the list of all of them.
    assert "unknown command `rendr`; did you mean `render`?" in err
    assert "`trainops --help` lists them" in err
