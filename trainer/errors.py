"""The trainer's one user-facing error type (its own module so every layer can raise it)."""


class ConfigError(ValueError):
    """A bad flag, YAML key or value; the message says which and what to do (exit code 2)."""
