"""trainops: training-job specs in, validated Kubernetes manifests out."""

__version__ = "0.1.0"
