"""`trainops run-local`: run a job's built PyTorchJob here, one process group per replica.

`source` reads the job from the kustomize-built overlay, `operator_env` computes what the
Training Operator injects, `kube` does what the kubelet does to env and command, `plan` scales
the job to this machine and says what it changed, `supervise` runs the replicas and decides the
outcome with the operator's restart and success rules. docs/run-local.md explains each step.
"""
