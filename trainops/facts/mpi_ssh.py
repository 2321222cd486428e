"""The MPI Operator v2beta1's launcher/worker contract (kubeflow/mpi-operator v0.8.0): the
Launcher's mpirun starts the ranks over SSH, so every Worker must run sshd, and both must run
as the user whose `~/.ssh` is where the operator mounts the keys.

pkg/controller/mpi_job_controller.go mounts Secret `<job>-ssh` (`id_rsa`, `id_rsa.pub`,
`authorized_keys`) at `sshAuthMountPath` (default `/root/.ssh`, mode 0600 there, 0644
elsewhere) in the Launcher and every Worker, and runs the Workers' own command, or
`/usr/sbin/sshd -De` when the Worker's first container has neither command nor args
(`newWorker`): the image's default sshd config, which only root can run (host keys readable
by root only, the pid file under /run). OpenSSH reads the keys from the home directory of the
user it runs as (its passwd entry, not $HOME): root's is /root, and a uid the image has no
passwd entry for cannot log in at all ("No user exists for uid ...").

Known images: the MPI Operator's own (build/base/Dockerfile: `useradd -m mpiuser`, the first
uid, 1000, on debian:trixie; sshd config `/home/mpiuser/.sshd_config` with the Secret's
`id_rsa` as host key, port 2222; their examples run `/usr/sbin/sshd -De -f
/home/mpiuser/.sshd_config` as uid 1000 with `sshAuthMountPath: /home/mpiuser/.ssh`), and
Horovod's (root, OpenSSH server installed, default command bash: its docs start
`/usr/sbin/sshd` themselves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
OPERATOR_WORKER_COMMAND = ("/usr/sbin/sshd", "-De")
"""What the operator runs on a Worker whose first container has no command and no args."""
_SSHD_STARTS = re.compile(
    r"(?:^|[\s/;&|'\"(])sshd(?:[\s;&|'\")]|$)|\bservice ssh(?:d)? start|init\.d/ssh(?:d)? start"
)


@dataclass(frozen=True)
class SshImage:
    """Who an image's sshd and ssh run as, and how its Workers start sshd."""

    user: str
    uid: int
    home: str
    worker_command: tuple[str, ...]

    @property
    def ssh_dir(self) -> str:
        return f"{self.home}/.ssh"


MPI_OPERATOR_IMAGE = SshImage(
    user="mpiuser",
    uid=1000,
    home="/home/mpiuser",
    worker_command=("/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"),
)
ROOT_SSHD_IMAGE = SshImage(
    user="root", uid=0, home="/root", worker_command=("/usr/sbin/sshd", "-De")
)
# Image repositories -> their contract: the MPI Operator's images built on build/base (v0.8.0
# build/base/*.Dockerfile, examples/v2beta1/pi), and the Horovod-based ones that run as root
# (Horovod's own; the operator's tensorflow-benchmarks example, FROM horovod/horovod).
_MPIUSER_IMAGES = ("base", "openmpi", "openmpi-builder", "intel", "intel-builder", "mpich",
                   "mpich-builder", "mpi-pi")  # fmt: skip
KNOWN_IMAGES: dict[str, SshImage] = {
    **{f"mpioperator/{name}": MPI_OPERATOR_IMAGE for name in _MPIUSER_IMAGES},
    "mpioperator/tensorflow-benchmarks": ROOT_SSHD_IMAGE,
    "horovod/horovod": ROOT_SSHD_IMAGE,
    "uber/horovod": ROOT_SSHD_IMAGE,
}


def image_contract(image: str | None) -> SshImage | None:
    """The known contract of `image` (by repository, Docker Hub's `docker.io/` or not), or None."""
    if not image:
        return None
    name = image.split("@")[0]
    last = name.rsplit("/", 1)[-1]
    repository = name.rsplit(":", 1)[0] if ":" in last else name
    return KNOWN_IMAGES.get(repository.removeprefix("docker.io/"))


def runs_sshd(argv: list[str]) -> bool:
    """Whether a command starts sshd: directly, in a `sh -c` script, or by its init script
    (`service ssh start`, `/etc/init.d/ssh start`)."""
    return bool(_SSHD_STARTS.search(" ".join(argv)))
