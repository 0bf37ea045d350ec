"""The store domain core: what StreamStore and AsyncStreamStore decide, as programs, without I/O."""
