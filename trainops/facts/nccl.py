"""NCCL environment variables: the names NCCL reads, and the ones it renamed or removed.

One place for this data, with the NCCL version it was taken from, so an update is
one diff. Source: the NCCL user guide, "Environment Variables"
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
"""

from __future__ import annotations

# NCCL over InfiniBand/RoCE registers (pins) memory with the NIC, which needs the memlock
# limit the IPC_LOCK capability lifts; no other capability is needed. Pod Security admits it
# at no level (https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline,
# "Capabilities"), so an RDMA cluster must admit it by name (`podSecurity.allowCapabilities`).
RDMA_CAPABILITY = "IPC_LOCK"

NCCL_VERSION = "2.27"
"""NCCL release whose documentation `KNOWN` follows."""

KNOWN: frozenset[str] = frozenset(
    {
        # System configuration / networking
        "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_RETRY_CNT",
        "NCCL_SOCKET_RETRY_SLEEP_MSEC", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD",
        "NCCL_CROSS_NIC", "NCCL_IB_HCA", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT",
        "NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE",
        "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_SL", "NCCL_IB_TC", "NCCL_IB_FIFO_TC",
        "NCCL_IB_RETURN_ASYNC_EVENTS", "NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_IB_ADAPTIVE_ROUTING",
        "NCCL_IB_AR_THRESHOLD", "NCCL_IB_ECE_ENABLE", "NCCL_IB_MERGE_NICS", "NCCL_IB_MERGE_VFS",
        "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_USE_INLINE",
        "NCCL_IB_DISABLE", "NCCL_IB_DATA_DIRECT", "NCCL_OOB_NET_ENABLE", "NCCL_OOB_NET_IFNAME",
        "NCCL_UID_STAGGER_THRESHOLD", "NCCL_UID_STAGGER_RATE", "NCCL_NET", "NCCL_NET_PLUGIN",
        "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN", "NCCL_NET_GDR_LEVEL",
        "NCCL_NET_GDR_READ", "NCCL_NET_GDR_C2C", "NCCL_NET_SHARED_BUFFERS",
        "NCCL_NET_SHARED_COMMS", "NCCL_NET_DISABLE_INTRA", "NCCL_NET_FORCE_FLUSH",
        "NCCL_NET_MERGE_LEVEL", "NCCL_NET_OVERHEAD", "NCCL_SHM_DISABLE",
        "NCCL_SHM_USE_CUDA_MEMCPY", "NCCL_SHM_MEMCPY_MODE", "NCCL_SHM_LOCALITY",
        "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_DIRECT_DISABLE", "NCCL_P2P_READ_ENABLE",
        "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE",
        "NCCL_P2P_LL_THRESHOLD", "NCCL_P2P_USE_CUDA_MEMCPY", "NCCL_P2P_PXN_LEVEL",
        "NCCL_PXN_DISABLE", "NCCL_NVB_DISABLE", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
        "NCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_DISABLED_P2P", "NCCL_CONF_FILE", "NCCL_HOSTID",
        "NCCL_COMM_ID", "NCCL_SET_STACK_SIZE", "NCCL_SET_THREAD_NAME", "NCCL_GDRCOPY_ENABLE",
        "NCCL_GDRCOPY_FLUSH_ENABLE", "NCCL_GDRCOPY_SYNC_ENABLE", "NCCL_DMABUF_ENABLE",
        "NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_RAS_ENABLE",
        "NCCL_RAS_ADDR", "NCCL_RAS_TIMEOUT_FACTOR",
        # Debugging
        "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_TIMESTAMP_FORMAT",
        "NCCL_DEBUG_TIMESTAMP_LEVELS", "NCCL_WARN_ENABLE_DEBUG_INFO",
        # Performance tuning
        "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS",
        "NCCL_MAX_CTAS", "NCCL_MIN_CTAS", "NCCL_CGA_CLUSTER_SIZE", "NCCL_CHECK_POINTERS",
        "NCCL_LAUNCH_MODE", "NCCL_COLLNET_ENABLE", "NCCL_COLLNET_NODE_THRESHOLD", "NCCL_ALGO",
        "NCCL_PROTO", "NCCL_RUNTIME_CONNECT", "NCCL_GRAPH_REGISTER", "NCCL_LOCAL_REGISTER",
        "NCCL_LEGACY_CUDA_REGISTER", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_NVLS_ENABLE",
        "NCCL_NVLS_NCHANNELS", "NCCL_NVLS_CHUNKSIZE", "NCCL_NCHANNELS_PER_NET_PEER",
        "NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS", "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
        "NCCL_COMM_BLOCKING", "NCCL_COMM_SPLIT_SHARE_RESOURCES", "NCCL_WORK_FIFO_DEPTH",
        "NCCL_WORK_FIFO_BYTES", "NCCL_CTA_POLICY", "NCCL_NVTX_DISABLE",
    }
)  # fmt: skip

DEPRECATED: dict[str, str] = {
    "NCCL_MIN_NRINGS": "legacy name of NCCL_MIN_NCHANNELS: use NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NRINGS": "legacy name of NCCL_MAX_NCHANNELS: use NCCL_MAX_NCHANNELS",
    "NCCL_TREE_THRESHOLD": "removed in NCCL 2.5.6 and ignored: drop it (use NCCL_ALGO to pick"
    " algorithms)",
    "NCCL_LL_THRESHOLD": "removed in NCCL 2.5.6 and ignored: drop it (use NCCL_PROTO to pick"
    " protocols)",
    "NCCL_RINGS": "removed in NCCL 2.5.6 and ignored: drop it",
    "NCCL_IB_CUDA_SUPPORT": "replaced by NCCL_NET_GDR_LEVEL in NCCL 2.4.0: use NCCL_NET_GDR_LEVEL",
    "NCCL_CHECKS_DISABLE": "deprecated in NCCL 2.2.12: use NCCL_CHECK_POINTERS",
    # Read by PyTorch, not NCCL; PyTorch 2.2 renamed them and warns on the old names.
    # https://pytorch.org/docs/stable/torch_nccl_environment_variables.html
    "NCCL_ASYNC_ERROR_HANDLING": "read by PyTorch, not NCCL; renamed"
    " TORCH_NCCL_ASYNC_ERROR_HANDLING in PyTorch 2.2",
    "NCCL_BLOCKING_WAIT": "read by PyTorch, not NCCL; renamed TORCH_NCCL_BLOCKING_WAIT in"
    " PyTorch 2.2",
    "NCCL_DESYNC_DEBUG": "read by PyTorch, not NCCL; renamed TORCH_NCCL_DESYNC_DEBUG in"
    " PyTorch 2.2",
    "NCCL_ENABLE_TIMING": "read by PyTorch, not NCCL; renamed TORCH_NCCL_ENABLE_TIMING in"
    " PyTorch 2.2",
}

# What people reach for when they write a name NCCL does not have.
UNKNOWN_HINTS: dict[str, str] = {
    "NCCL_TIMEOUT": "NCCL has no timeout variable: set the process-group timeout"
    " (`torch.distributed.init_process_group(timeout=...)`) and let PyTorch abort hung"
    " collectives (TORCH_NCCL_ASYNC_ERROR_HANDLING, TORCH_NCCL_BLOCKING_WAIT);"
    " NCCL_IB_TIMEOUT is the InfiniBand verbs timeout, not a collective timeout",
    "NCCL_SOCKET_TIMEOUT": "NCCL has no socket timeout variable: use the process-group"
    " timeout in torch (`init_process_group(timeout=...)`)",
}
