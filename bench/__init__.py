"""Benchmarks (`make bench`, `make bench-trainer`): results go to bench/results/*.json."""
