"""Data the rules read: NCCL and Training Operator facts, kept in one place."""
