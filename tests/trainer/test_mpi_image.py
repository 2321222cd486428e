"""The trainer image's `mpi` target against the MPIJob that runs it (issue 24 item 5).

MPI Operator v2beta1 (kubeflow/mpi-operator v0.8.0, pkg/controller/mpi_job_controller.go) runs
the Workers' command (here sshd), mounts Secret `<job>-ssh` at `sshAuthMountPath` (items
`id_rsa`, `id_rsa.pub`, `authorized_keys`; mode 0644 unless the path is /root/.ssh), and the
Launcher's mpirun reaches every Worker over SSH as the pod's user. Its own images do this as
`mpiuser` (build/base/Dockerfile: `useradd -m mpiuser`, sshd on port 2222, `StrictModes no`,
client `StrictHostKeyChecking no` and `UserKnownHostsFile /dev/null`; build/base/sshd_config:
`HostKey /home/mpiuser/.ssh/id_rsa`). The first test reads the Dockerfile, the two config
files and the committed rendering of jobs/horovod-training.yaml, so neither side can drift;
the others run this machine's real OpenSSH with the image's two config files.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, find_tool, require_tool, skip_or_fail
from tests.trainer.launch import free_port
from tests.trainer.test_dockerfile import _code, stages

IMAGE_DIR = REPO / "trainer" / "image"
SSHD_CONFIG = IMAGE_DIR / "sshd_config"
SSH_CONFIG = IMAGE_DIR / "ssh_config"
JOB = REPO / "jobs" / "horovod-training.yaml"
RENDERED = REPO / "base" / "horovod-training" / "mpijob.yaml"
# The pytorch/pytorch images' Python (a conda environment): ENV PATH=/opt/conda/bin:... in
# pytorch/pytorch's Dockerfile (github.com/pytorch/pytorch, Dockerfile, `ENV PATH`).
IMAGE_PYTHON_DIR = "/opt/conda/bin"


def config(path: Path) -> dict[str, str]:
    """An OpenSSH config file as `keyword -> value` (first value wins, as OpenSSH reads it)."""
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out.setdefault(key.lower(), value.strip())
    return out


def mpi_stage() -> str:
    return stages()["mpi"][1]


def rendered() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(RENDERED.read_text().split("\n", 1)[1])
    return job


def test_rendered_mpijob_runs_what_the_mpi_image_sets_up() -> None:
    """User, uid, home, sshd command and config, key mount, port and program: the committed
    MPIJob of jobs/horovod-training.yaml and the Dockerfile's `mpi` stage agree."""
    stage = mpi_stage()
    user = re.search(r"useradd --create-home --uid (\d+) .*?(\w+)\s*$", stage, re.MULTILINE)
    assert user, "the mpi stage creates its user with a fixed uid and a home"
    uid, name = int(user.group(1)), user.group(2)
    home = f"/home/{name}"
    assert re.search(rf"^USER {uid}:{uid}$", stage, re.MULTILINE)
    copies = dict(
        (src, dest)
        for src, dest in re.findall(r"^COPY (?:--chown=\S+ )?(\S+) (\S+)$", stage, re.MULTILINE)
    )
    sshd_config_path = copies["trainer/image/sshd_config"]
    assert copies["trainer/image/ssh_config"].startswith("/etc/ssh/ssh_config.d/")
    assert f"--chown={name}:{name} trainer/image/sshd_config" in stage
    cmd = re.search(r"^CMD (\[.*\])$", stage, re.MULTILINE)
    assert cmd and yaml.safe_load(cmd.group(1)) == ["/usr/sbin/sshd", "-De", "-f", sshd_config_path]

    job = rendered()
    spec = job["spec"]
    ssh_dir = spec["sshAuthMountPath"]
    assert ssh_dir == f"{home}/.ssh"
    server, client = config(SSHD_CONFIG), config(SSH_CONFIG)
    assert server["hostkey"] == f"{ssh_dir}/id_rsa"  # the Secret's private key item
    assert server["authorizedkeysfile"] == f"{ssh_dir}/authorized_keys"
    assert client["identityfile"] == f"{ssh_dir}/id_rsa"
    assert server["port"] == client["port"] and int(server["port"]) > 1024  # non-root server
    assert server["strictmodes"] == "no"
    assert client["stricthostkeychecking"] == "no" and client["userknownhostsfile"] == "/dev/null"

    image = yaml.safe_load(JOB.read_text())["image"]
    for role in ("Launcher", "Worker"):
        pod = spec["mpiReplicaSpecs"][role]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"] == image and image.endswith("-mpi"), role
        assert pod["securityContext"]["runAsUser"] == uid, role
        assert pod["securityContext"]["runAsGroup"] == uid, role
        if container["securityContext"].get("readOnlyRootFilesystem"):
            mounts = [m["mountPath"] for m in container.get("volumeMounts", [])]
            pid = server["pidfile"]
            assert pid == "none" or any(pid.startswith(m + "/") for m in mounts), role
    (worker,) = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert worker["command"] == ["/usr/sbin/sshd", "-De", "-f", sshd_config_path]
    (launcher,) = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    argv = [*launcher["command"], *launcher["args"]]
    assert argv[0] == "mpirun" and "openmpi-bin" in _code(stage)  # Open MPI's mpirun, orted
    program = argv[argv.index("python") :]
    assert program[:3] == ["python", "-m", "trainer"]
    # The ranks start from the sshd session (orted), whose PATH is sshd's: it must find the
    # image's python, where `pip install --no-deps .` put the trainer (the runtime stage).
    path = server["setenv"].removeprefix("PATH=").split(":")
    assert path[0] == IMAGE_PYTHON_DIR
    assert stages()["mpi"][0] == "runtime" and "pip install --no-deps ." in stages()["runtime"][1]


def _sshd() -> str:
    found = find_tool("sshd") or shutil.which("sshd", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        skip_or_fail("no sshd: apt-get install openssh-server (make setup as root does)")
    return found


def _secret(directory: Path) -> None:
    """The operator's Secret as the kubelet mounts it: an ECDSA P-521 private key in PEM as
    `id_rsa` (newSSHAuthSecret: ecdsa.GenerateKey(elliptic.P521()), x509.MarshalECPrivateKey),
    its public key as `id_rsa.pub` and `authorized_keys`, mode 0644, owned by another user
    than the server's (root there, the server runs as 1000). Not root here: the files are ours
    and OpenSSH refuses a private key its owner shares, so 0600 (the one local difference)."""
    keygen = require_tool("ssh-keygen")
    directory.mkdir(parents=True)
    key = directory / "id_rsa"
    subprocess.run(
        [keygen, "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-f", str(key)],
        check=True,
    )
    shutil.copy(directory / "id_rsa.pub", directory / "authorized_keys")
    for item in directory.iterdir():
        item.chmod(0o644)
    if os.geteuid() == 0:
        for item in directory.iterdir():
            os.chown(item, 65534, -1)  # nobody: not the server's user, as in the pod
    else:
        key.chmod(0o600)


def _local(path: Path, ssh_dir: Path, port: int, extra: str = "") -> Path:
    """The image's config file with the key directory and port of this test."""
    text = path.read_text().replace("/home/mpiuser/.ssh", str(ssh_dir))
    text = re.sub(r"^(\s*Port) \d+$", rf"\1 {port}", text, flags=re.MULTILINE)
    out = ssh_dir.parent / path.name
    out.write_text(text + extra)
    return out


@pytest.fixture
def worker(tmp_path: Path) -> Any:
    """A Worker's sshd, as the MPIJob starts it (`sshd -De -f <config>`), with the image's
    sshd_config; yields the client config the Launcher uses (the image's ssh_config)."""
    sshd = _sshd()
    ssh_dir = tmp_path / "home" / ".ssh"
    _secret(ssh_dir)
    port = free_port()
    server_config = _local(SSHD_CONFIG, ssh_dir, port)
    client_config = _local(SSH_CONFIG, ssh_dir, port)
    if os.geteuid() == 0:
        # A root sshd separates privileges into /run/sshd (Debian's unit creates it; a
        # non-root sshd, the pod's, needs none).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    check = subprocess.run(
        [sshd, "-t", "-f", str(server_config)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    log = ssh_dir.parent / "sshd.log"
    with log.open("w") as out:
        server = subprocess.Popen([sshd, "-De", "-f", str(server_config)], stderr=out)
    try:
        yield client_config
    finally:
        server.terminate()
        server.wait(timeout=10)


def _logins(client_config: Path) -> int:
    """Logins the Worker's sshd accepted with the job's key (its -e log)."""
    return (client_config.parent / "sshd.log").read_text().count("Accepted publickey")


def _ssh(client_config: Path, host: str, command: str) -> subprocess.CompletedProcess[str]:
    ssh = require_tool("ssh")
    return subprocess.run(
        [ssh, "-F", str(client_config), host, command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _until_up(client_config: Path) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 20
    while True:
        result = _ssh(client_config, "127.0.0.1", "printenv PATH")
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


@pytest.mark.slow
def test_launcher_logs_into_a_worker_with_the_image_configs(worker: Path) -> None:
    """OpenSSH (this machine's) reads both files: the Worker's sshd takes the Secret's
    `id_rsa` as its host key and `authorized_keys` despite mode 0644 (StrictModes no) and
    writes no pid file; the Launcher's client logs in with `id_rsa` on the config's port
    without a known_hosts file, and the session's PATH holds the image's Python first of what
    sshd_config sets (the shell's own start-up files may add in front of it)."""
    result = _until_up(worker)
    assert result.returncode == 0, result.stderr
    wanted = config(SSHD_CONFIG)["setenv"].removeprefix("PATH=")
    assert result.stdout.strip().endswith(wanted), result.stdout
    assert "known_hosts" not in result.stderr


@pytest.mark.slow
def test_mpirun_starts_the_trainer_ranks_through_the_workers_sshd(
    worker: Path, tmp_path: Path
) -> None:
    """The Launcher's path end to end: Open MPI's mpirun starts its orted on a "remote" host
    over ssh (the image's client config, as `OMPI_MCA_plm_rsh_agent`; 127.0.0.2 is this
    machine, but not an address of its interfaces, so Open MPI does not start it locally), and
    orted starts the trainer's ranks there, which train with torch.distributed on the
    variables Open MPI gives them and the MASTER_ADDR the Launcher exports."""
    mpirun = require_tool("mpirun")
    up = _until_up(worker)
    assert up.returncode == 0, up.stderr
    up_logins = _logins(worker)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("127.0.0.2 slots=2\n")
    env = {
        **os.environ,
        "OMPI_MCA_plm_rsh_agent": f"{require_tool('ssh')} -F {shlex.quote(str(worker))}",
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "PYTHONPATH": str(REPO),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
    }
    argv = [mpirun, "-np", "2", "-x", "PYTHONPATH", "-x", "MASTER_ADDR", "-x", "MASTER_PORT"]
    argv += ["-x", "CUDA_VISIBLE_DEVICES", "-x", "OMP_NUM_THREADS", "-x", "PYTHONUNBUFFERED"]
    tiny = ["--model=gpt-tiny", "--data=synthetic-tokens", "--seq-len=32", "--batch-size=8"]
    tiny += ["--num-workers=0", "--log-interval=1", "--steps=2", "--check-ranks"]
    result = subprocess.run(
        [*argv, sys.executable, "-m", "trainer", *tiny],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert _logins(worker) > up_logins, "orted was started through the Worker's sshd"
    events = [yaml.safe_load(line) for line in result.stdout.splitlines() if line.startswith("{")]
    exits = sorted(e["rank"] for e in events if e.get("event") == "exit" and e["code"] == 0)
    assert exits == [0, 1]
    (done,) = [e for e in events if e.get("event") == "finished"]
    assert done["step"] == 2 and done["ranks_identical"]
