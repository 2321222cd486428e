"""The rules, one module per small family; `trainops.rules.registry` lists them in order."""
