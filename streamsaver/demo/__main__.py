"""``python -m streamsaver.demo [--url URL]``: the same as ``streamsaver demo``."""

from __future__ import annotations

import sys

from streamsaver.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["demo", *sys.argv[1:]]))
