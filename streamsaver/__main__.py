"""``python -m streamsaver``: the ``streamsaver`` command."""

import sys

from streamsaver.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
