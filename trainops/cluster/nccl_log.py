"""What a rank's log says about its collectives: the network NCCL chose, whether it died of a
peer's failure, and whether it is stuck waiting in NCCL's or the rendezvous' set-up.

NCCL with `NCCL_DEBUG=INFO` prints, per communicator, the transport it selected
(`init.cc`/`net.cc` of NCCL 2.x), in lines of the form
`<host>:<pid>:<tid> [<dev>] NCCL INFO Using network IB` (or `Socket`, `IBext_v8`, a
plugin's name) after `NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>` or
`NET/Socket : Using [0]eth0:10.0.0.1<0>`. Only `Socket` is TCP; every other network
(IB, RoCE through NET/IB, the IBext / SHARP plugin, AWS OFI, ...) is RDMA-capable.
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SOCKET = "Socket"
_USING_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_NET_USING = re.compile(r"NCCL INFO NET/(\w+) ?: Using (.+?)\s*$")

# The errors a rank raises when a peer is gone: NCCL's remote/system errors as torch
# raises them (`DistBackendError: NCCL error in: ...`), the ProcessGroupNCCL watchdog's
# timeout, gloo's TCP pair errors, and torchrun's c10d store / rendezvous losing its peers.
_PEER_GONE = re.compile(
    r"NCCL error|ncclRemoteError|ncclSystemError|ncclInternalError"
    r"|Watchdog caught collective operation timeout"
    r"|Connection closed by peer|Connection reset by peer|Broken pipe"
    r"|DistNetworkError|RendezvousClosedError|RendezvousConnectionError"
    r"|Socket Timeout|remote process exited"
)
# Lines that mean the process is still setting up its collectives: NCCL's INFO lines
# (bootstrap, rings, channels) and torchrun's rendezvous / c10d store waits.
_SETTING_UP = re.compile(
    r"NCCL INFO|Waiting in store based barrier|waiting for .* to join|Rendezvous"
    r"|\[c10d\] The client socket has (failed to connect|timed out)"
)


@dataclass(frozen=True)
class Transport:
    """The network one pod's NCCL chose."""

    pod: str
    network: str
    """`IB`, `Socket`, `IBext_v8`, ..."""
    detail: str
    """The devices, from the `NET/<name> : Using ...` line ("" when absent)."""

    @property
    def is_socket(self) -> bool:
        return self.network == SOCKET

    def __str__(self) -> str:
        return f"{self.pod}: NET/{self.network}" + (f" {self.detail}" if self.detail else "")


def transport(pod: str, lines: list[str]) -> Transport | None:
    """The network NCCL chose in this log (the last `Using network` line), if it says."""
    network = None
    details: dict[str, str] = {}
    for line in lines:
        used = _USING_NETWORK.search(line)
        if used:
            network = used.group(1)
        net = _NET_USING.search(line)
        if net:
            details[net.group(1)] = net.group(2)
    if network is None:
        return None
    return Transport(pod, network, details.get(network, ""))


def fallbacks(found: list[Transport]) -> list[Transport]:
    """The pods whose NCCL runs over TCP sockets."""
    return [t for t in found if t.is_socket]


def peer_gone(lines: list[str]) -> bool:
    """Whether the log's last lines show a collective failing because a peer is gone."""
    return any(_PEER_GONE.search(line) for line in lines[-80:])


def setting_up(lines: list[str], last: int = 3) -> list[str]:
    """The log's last lines when all of them are NCCL set-up or rendezvous waits, else []."""
    tail = [line for line in lines if line.strip()][-last:]
    if tail and all(_SETTING_UP.search(line) for line in tail):
        return tail
    return []
