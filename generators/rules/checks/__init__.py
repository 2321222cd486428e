"""The rules, one module per small family; `generators.rules.registry` lists them in order."""
