"""``python -m flashtrace.cli``: the same as the ``flashtrace`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
