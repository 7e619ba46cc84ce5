"""``python -m perfvar``: same as the ``perfvar`` console script."""

import sys

from perfvar.cli import main

if __name__ == "__main__":  # not when a worker process re-imports the main module
    sys.exit(main())
