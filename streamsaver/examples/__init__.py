"""Subscribers shipped as examples, usable as they are: `audit` (a hash-chained JSON Lines
trail with a verify step) and `analytics` (per-node step counts, write sizes and interrupts).
Both are also CLI commands: ``streamsaver audit`` and ``streamsaver analytics``."""
