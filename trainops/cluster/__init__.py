"""The live cluster, through pykube-ng: status, explain, live diff and server-side dry run.

Git says what should run; these modules read what does. `kubeconfig` picks the
user's kubeconfig and context the way kubectl does; `client` is a thin layer over
pykube-ng that turns every transport and API failure into one `ClusterError`
line; `status`, `explain`, `compare` and `dryrun` each answer one question and
return data, never print: the CLI (`trainops/cli/`) formats and picks exit codes.
"""

# kubectl's own default is no timeout; a CLI that waits forever on a dead VPN is worse. Here,
# not in `client`, so that a command's parser reads it without importing pykube and requests
# (a tenth of a second of every `trainops validate`).
DEFAULT_TIMEOUT_SECONDS = 10.0
