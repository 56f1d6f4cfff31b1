"""``python -m lsrbench``: the command line (:mod:`lsrbench.cli`)."""

import sys

from .cli import main

sys.exit(main())
