"""Validation: strict schemas for every object (core kinds, our CRD schemas, real CRDs).

`validate_manifests` is the one entry point; policy rules plug into `CHECKERS`.
"""

from trainops.validate.pipeline import CHECKERS, validate_manifests

__all__ = ["CHECKERS", "validate_manifests"]
