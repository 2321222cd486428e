"""`trainops import`: existing Kubeflow manifests (and the claims, Services and monitors
beside them) to job specs. The high-level fields carry whatever they can say the same way;
the escape hatch carries the rest of each pod template, computed against what trainops
renders for the target cluster; everything else is a note naming the field and why.

One module per job kind (`pytorch.py`), registered in `kinds.py`.
"""
