"""What kustomize does to names: the content hash its generators append.

configMapGenerator/secretGenerator append `-` and a 10-character hash in kustomize's
encoding alphabet (sigs.k8s.io/kustomize/api/hasher: encode() maps the hex digits
0,1,3,a,e to g,h,k,m,t, so the other vowels and 0/1/3 never appear).
"""

from __future__ import annotations

import re

HASH_SUFFIX = re.compile(r"-[2456789bcdfghkmt]{10}$")
GENERATORS = {"configMapGenerator": "ConfigMap", "secretGenerator": "Secret"}
"""kustomization fields that generate objects, and the kind each generates."""
HASHED_KINDS = frozenset(GENERATORS.values())


def unhashed(name: str) -> str:
    """A generated object's name as its generator declares it (hash suffix removed)."""
    return HASH_SUFFIX.sub("", name)
