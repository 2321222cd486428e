"""Core types every layer shares: errors, findings, manifests, YAML in and out, paths."""
