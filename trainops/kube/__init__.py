"""Typed, read-only views of built Kubernetes objects, written once for every reader.

Rules, the report, run-local, the cluster commands, the diff, import and the CLI read a built
manifest through these views: what kind of job it is, its replica types and counts, its pod
templates and their containers, the training container, a PyTorchJob's elastic range, the
torchrun and mpirun command lines, a TrainJob merged with its runtime. The operators'
defaults they apply are facts (`trainops.facts`), cited there; the views only read.
"""
