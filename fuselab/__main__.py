"""``python -m fuselab``: the ``fuselab`` command line (``fuselab.cli``)."""

import sys

from fuselab.cli import main

if __name__ == "__main__":
    sys.exit(main())
