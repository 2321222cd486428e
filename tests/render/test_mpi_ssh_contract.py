"""Every MPIJob trainops renders or imports starts under the MPI Operator v0.8's launcher/worker
contract: the Workers run sshd, the keys are mounted where the pods' user's ssh reads them, and
the pods run as the user the image has (issue 37 item 5).

The image of `trainops preflight` is nccl-tests built on `mpioperator/openmpi` (docs/monitoring.md).
That image, as kubeflow/mpi-operator v0.8.0 build/base/Dockerfile builds it: `useradd -m mpiuser`
(the first uid, 1000, on debian:trixie), `/home/mpiuser/.sshd_config` from build/base/sshd_config
(`PidFile /home/mpiuser/sshd.pid`, `HostKey /home/mpiuser/.ssh/id_rsa`, `StrictModes no`) plus
`Port 2222`, and in /etc/ssh/ssh_config `StrictHostKeyChecking no`, `UserKnownHostsFile /dev/null`,
`Port 2222`. The configs are written below from those lines (nothing is copied from the
repository); this machine's real OpenSSH and Open MPI then run the rendered Worker command and
log in with the keys where the rendered `sshAuthMountPath` puts them, as the Launcher does.
On main the preflight's Workers had no command (the operator's `/usr/sbin/sshd -De`, which a
non-root user cannot run), uid 10001 and the keys at /root/.ssh: it failed at ssh.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.rules.helpers import seed_text, yaml_blocks
from tests.tools import REPO, copy_inputs, require_tool, trainops
from tests.trainer.launch import free_port
from tests.trainer.test_mpi_image import _secret, _sshd

IMAGE = "registry.example.com/nccl-tests:2.16.2-mpi"
# The mpioperator/openmpi image (v0.8.0 build/base): its user, home and sshd config.
IMAGE_USER, IMAGE_UID, IMAGE_HOME = "mpiuser", 1000, "/home/mpiuser"
IMAGE_SSHD_CONFIG = (
    "PidFile /home/mpiuser/sshd.pid\nHostKey /home/mpiuser/.ssh/id_rsa\nStrictModes no\nPort 2222\n"
)
IMAGE_SSH_CONFIG = "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n" \
    "    Port 2222\n"  # fmt: skip


def _preflight(cluster: str = "onprem-a100") -> dict[str, Any]:
    result = trainops(REPO, "preflight", "llm-finetune", "--cluster", cluster, "--image", IMAGE)
    assert result.returncode == 0, result.stderr
    mpijob: dict[str, Any] = next(d for d in yaml.safe_load_all(result.stdout) if d)
    return mpijob


def _pod(mpijob: dict[str, Any], role: str) -> dict[str, Any]:
    spec: dict[str, Any] = mpijob["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
    return spec


def _uid(pod: dict[str, Any]) -> int:
    container = pod["containers"][0]
    uid = (container.get("securityContext") or {}).get("runAsUser")
    return int(uid if uid is not None else pod["securityContext"]["runAsUser"])


@pytest.mark.parametrize("cluster", ["onprem-a100", "cloud-h100"])
def test_the_preflight_runs_the_images_sshd_as_its_user(cluster: str) -> None:
    mpijob = _preflight(cluster)
    worker, launcher = _pod(mpijob, "Worker"), _pod(mpijob, "Launcher")
    argv = [*worker["containers"][0]["command"], *worker["containers"][0].get("args", [])]
    assert argv == ["/usr/sbin/sshd", "-De", "-f", f"{IMAGE_HOME}/.sshd_config"]
    host_key = next(line.split()[1] for line in IMAGE_SSHD_CONFIG.splitlines()
                    if line.startswith("HostKey"))  # fmt: skip
    assert mpijob["spec"]["sshAuthMountPath"] == os.path.dirname(host_key) == f"{IMAGE_HOME}/.ssh"
    assert _uid(worker) == _uid(launcher) == IMAGE_UID
    assert "--allow-run-as-root" not in launcher["containers"][0]["args"]


def _image_root(tmp_path: Path) -> tuple[Path, Path]:
    """The image's home under `tmp_path`: the sshd config at its place, the operator's Secret
    at the rendered `sshAuthMountPath`; the config's own paths moved with it (its PidFile
    stays where the read-only root filesystem keeps sshd from writing it)."""
    home = tmp_path / IMAGE_HOME.lstrip("/")
    _secret(home / ".ssh")
    port = free_port()
    sshd_config = home / ".sshd_config"
    text = IMAGE_SSHD_CONFIG.replace("HostKey /home/mpiuser/", f"HostKey {home}/")
    sshd_config.write_text(
        text.replace("Port 2222", f"Port {port}")
        + f"AuthorizedKeysFile {home}/.ssh/authorized_keys\n"
    )
    client = tmp_path / "ssh_config"
    client.write_text(
        IMAGE_SSH_CONFIG.replace("Port 2222", f"Port {port}")
        + f"    IdentityFile {home}/.ssh/id_rsa\n"
    )
    return sshd_config, client


@pytest.mark.slow
def test_the_preflights_launcher_logs_in_and_mpirun_starts_ranks(tmp_path: Path) -> None:
    """The rendered Worker command (paths inside the image moved under tmp_path) under the
    real sshd; the real ssh logs in with the Secret's key from `sshAuthMountPath`; the real
    mpirun starts two ranks on the "remote" host through it, as the Launcher's does."""
    mpijob = _preflight()
    worker = _pod(mpijob, "Worker")["containers"][0]
    sshd_config, client = _image_root(tmp_path)
    argv = [*worker["command"], *worker.get("args", [])]
    argv = [_sshd() if a == "/usr/sbin/sshd" else a for a in argv]
    argv = [str(sshd_config) if a == f"{IMAGE_HOME}/.sshd_config" else a for a in argv]
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = tmp_path / "sshd.log"
    with log.open("w") as out:
        server = subprocess.Popen(argv, stderr=out)
    try:
        ssh = require_tool("ssh")
        deadline = time.monotonic() + 20
        while True:
            login = [ssh, "-F", str(client), "127.0.0.1", "true"]
            up = subprocess.run(login, capture_output=True, text=True, timeout=60, check=False)
            if up.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert up.returncode == 0, up.stderr + log.read_text()
        hostfile = tmp_path / "hostfile"
        hostfile.write_text("127.0.0.2 slots=2\n")
        env = {
            **os.environ,
            "OMPI_MCA_plm_rsh_agent": f"{ssh} -F {shlex.quote(str(client))}",
            "OMPI_MCA_orte_default_hostfile": str(hostfile),
            "OMPI_MCA_prte_default_hostfile": str(hostfile),
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        }
        mpirun = require_tool("mpirun")
        ranks = subprocess.run(
            [mpirun, "-np", "2", "--hostfile", str(hostfile), "sh", "-c",
             "echo rank=$OMPI_COMM_WORLD_RANK"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ranks.returncode == 0, ranks.stdout + ranks.stderr + log.read_text()
        assert sorted(ranks.stdout.split()) == ["rank=0", "rank=1"]
        assert log.read_text().count("Accepted publickey") >= 2
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_an_imported_seed_horovod_mpijob_runs_sshd_as_the_images_user(tmp_path: Path) -> None:
    """Seed 001's Horovod MPIJob (`horovod/horovod:latest-gpu`, root, no Worker command)
    imported for the MPI Operator: on main the spec rendered uid 10001, which the image has no
    user for, with the keys at /root/.ssh, and validated clean."""
    root = copy_inputs(REPO, tmp_path / "repo")
    (root / "jobs" / "horovod-training.yaml").unlink()
    block = next(b for b in yaml_blocks(seed_text("001")) if "kind: MPIJob" in b)
    source = tmp_path / "horovod.yaml"
    source.write_text(block + "\n")
    imported = trainops(root, "import", str(source), "--cluster", "onprem-a100")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "runs as root" in imported.stdout, imported.stdout
    spec = yaml.safe_load((root / "jobs" / "horovod-training.yaml").read_text())
    assert spec["securityContext"]["runAsUser"] == 0
    rendered = trainops(root, "render")
    assert rendered.returncode == 0, rendered.stderr
    mpijob = yaml.safe_load(
        (root / "base" / "horovod-training" / "mpijob.yaml").read_text().split("\n", 1)[1]
    )
    worker = _pod(mpijob, "Worker")
    # No command: the operator runs `/usr/sbin/sshd -De`, as root, keys at /root/.ssh.
    assert "command" not in worker["containers"][0] and "args" not in worker["containers"][0]
    assert _uid(worker) == _uid(_pod(mpijob, "Launcher")) == 0
    assert mpijob["spec"].get("sshAuthMountPath", "/root/.ssh") == "/root/.ssh"
    validated = trainops(root, "validate", "--cluster", "onprem-a100", "--format", "json")
    rules = {f["rule"] for f in yaml.safe_load(validated.stdout)["findings"]}
    assert "mpi-ssh-contract" not in rules
