"""Where the project's own files live, and the layout of a trainops repository."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The trainops checkout (holds `schemas/`)."""
SCHEMA_DIR = PROJECT_ROOT / "schemas"

JOBS_DIR = "jobs"
CLUSTERS_DIR = "clusters"
SETTINGS_FILE = "trainops.yaml"
BASE_DIR = "base"
OVERLAYS_DIR = "overlays"
GITOPS_DIR = "gitops"
GENERATED_DIRS = (BASE_DIR, OVERLAYS_DIR, GITOPS_DIR)
"""Directories `trainops render` owns entirely: anything else in them is stale."""
