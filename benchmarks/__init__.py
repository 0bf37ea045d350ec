"""Benchmarks of streamsaver against peer checkpointers; not part of the test suite."""
