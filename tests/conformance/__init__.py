"""Consumer conformance: what the programs that read our output do with it.

Every object trainops builds passes its schemas; that says nothing about what Argo CD, Flux,
an operator or a scheduler does with it. Each module here ports one consumer's acceptance or
interpretation logic that we depend on, small and in plain Python, citing the repository,
path, release and function it follows (`*_port.py`: the consumer's logic; `test_*.py`: it run
over our output). No mocks: the ports run over every object built from the shipped
repository and from the test repositories (tests/golden/rich, tests/render/fixtures/variety),
rendered with the CLI and built with the real kustomize, the way the controllers receive them.

Proven against: Argo CD v3.5.1 (AppProject destination and resource permission,
destinationServiceAccounts impersonation, ApplicationSet templatePatch, gitops-engine sync
waves) and Flux kustomize-controller v1.9.4 with fluxcd/pkg ssa v0.76.1 (dependsOn,
staged server-side apply, impersonation); Kubeflow Trainer v2.3.0 (TrainJob webhook, volcano
and coscheduling plugins), the Training Operator v1.9.4 (PyTorchJob/TFJob/MPIJob defaulting and
validation webhooks, the Volcano PodGroup from runPolicy), the MPI Operator v0.8 (defaults,
ValidateMPIJob, PodGroup), Volcano v1.15.1 (the PodGroup webhook's queue), Kueue v0.19.2
(integrations, queue label, the flavor assigner's covered resources) and the upstream CRDs of
every built custom resource. A port carries its consumer's own table-driven tests for the
ported function as vectors (test_mpi_operator.py, test_volcano.py,
test_trainer_v2_vectors.py). docs/gitops.md and docs/trainer-v2.md say how to add a consumer.
"""
