"""Consumer conformance: what we build, read the way its consumers' code reads it (issue 23)."""
