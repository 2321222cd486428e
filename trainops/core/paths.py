"""Where the project's own files live, and the layout of a trainops repository."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# Package data, found the same way in a checkout, an editable install and an installed wheel.
# pip installs wheels unpacked, so the resource is a real directory (tools such as kubeconform
# and shutil.copytree need a path, not a Traversable).
SCHEMA_DIR = Path(str(resources.files("trainops").joinpath("schemas")))
"""The spec schemas (`*.schema.json`) and the strict CRD schemas (`crds/`)."""

JOBS_DIR = "jobs"
CLUSTERS_DIR = "clusters"
SETTINGS_FILE = "trainops.yaml"
BASE_DIR = "base"
OVERLAYS_DIR = "overlays"
GITOPS_DIR = "gitops"
# Chart values for the platform's kube-state-metrics (render/kube_state_metrics.py), not
# Kubernetes objects: under gitops/ beside the delivery objects, never validated as manifests.
MONITORING_VALUES_DIR = f"{GITOPS_DIR}/monitoring"
GENERATED_DIRS = (BASE_DIR, OVERLAYS_DIR, GITOPS_DIR)
"""Directories `trainops render` owns entirely: anything else in them is stale."""
