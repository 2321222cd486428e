"""Issue 35 item 6: everything from outside is escaped for the terminal and for GitHub's
workflow commands, everywhere. On main, a newline in a key `import` drops wrote `secretEnv`
into the imported job spec (which then validated clean) and the notes printed raw ESC and
`::add-mask::` lines; `explain` printed pod logs and events raw (an OSC 52 clipboard write, a
rewritten diagnosis line) and `status` object names raw."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.security.test_attacks import _refused
from tests.tools import copy_inputs, trainops
from trainops.cluster.answer import Explanation, LogTail
from trainops.cluster.status import JobStatus, table
from trainops.core.text import inert_lines, one_line

# A key with a newline: what follows it would be a line of its own wherever it is printed.
HOSTILE = (
    "x\nsecretEnv:\n  TOKEN: {secret: team-b, key: token}\n"
    "\x1b]52;c;ZXZpbA==\x07\n::add-mask::y\n  ::stop-commands::z\n##[error]w"
)
MANIFEST = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: evil, namespace: ml-vision}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              command: [python, train.py]
"""


def _inert(text: str) -> None:
    """No control character but newline (and tab), no workflow command on any line."""
    assert not [c for c in text if c < " " and c not in "\n\t"], repr(text)
    assert "\x7f" not in text and "\u2028" not in text
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line


def test_import_writes_and_prints_notes_inert(tmp_path: Path) -> None:
    root = copy_inputs(Path(__file__).resolve().parents[2], tmp_path / "repo")
    data = yaml.safe_load(MANIFEST)
    data["spec"][HOSTILE] = 1  # a field trainops does not render: dropped with a note
    source = tmp_path / "in.yaml"
    source.write_text(yaml.safe_dump(data))
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not carried" in result.stdout
    _inert(result.stdout)
    written = (root / "jobs/evil.yaml").read_text()
    _inert(written)
    assert "secretEnv" not in yaml.safe_load(written), written
    # The spec renders: nothing the note said became part of it.
    assert trainops(root, "render").returncode == 0


def test_explain_prints_logs_events_and_names_inert() -> None:
    answer = Explanation(
        cause="CrashLoopBackOff",
        healthy=False,
        job=f"evil{HOSTILE}",
        pods=[f"evil-worker-0{HOSTILE}"],
        events=[f"Warning BackOff{HOSTILE}"],
        findings=[HOSTILE],
        log=LogTail("evil-worker-0", "pytorch", False, [HOSTILE, "\x1b[1A\x1b[2KCause: all fine"]),
    )
    text = answer.text()
    _inert(text)
    assert text.splitlines()[0] == "CrashLoopBackOff"  # the diagnosis stays the first line


def test_status_prints_object_names_inert() -> None:
    row = JobStatus("ml-vision", f"evil{HOSTILE}", "PyTorchJob", "Running", "in sync",
                    findings=[HOSTILE])  # fmt: skip
    text = table([row])
    _inert(text)
    assert len(text.splitlines()) == 4  # header, the row, a blank line, the one finding


def test_one_line_and_blocks_leave_no_workflow_command() -> None:
    assert one_line("::add-mask::x") == "\\x3a:add-mask::x"
    assert one_line("  ::error::x") == "  \\x3a:error::x"
    assert one_line("a ##[error]b") == "a #\\x23[error]b"
    assert one_line("a::b") == "a::b"  # only a command's place is taken
    _inert(inert_lines("--- git\n+++ live\n+  note: |\n+    ::add-mask::secret\n+ \x1b]52;c;x\x07"))


def test_a_job_spec_key_with_a_newline_is_reported_inert(scratch: Path) -> None:
    """A spec's own unknown key, echoed in the error: one line, no command."""
    job = scratch / "jobs/llm-finetune.yaml"
    job.write_text(job.read_text() + f"{yaml.safe_dump({HOSTILE: 1})}")
    _inert(_refused(scratch))
