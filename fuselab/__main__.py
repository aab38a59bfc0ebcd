"""``python -m refimpl``: the ``fuselab`` command line (``refimpl.cli``)."""

import sys

from refimpl.cli import main

if __name__ == "__main__":
    sys.exit(main())
