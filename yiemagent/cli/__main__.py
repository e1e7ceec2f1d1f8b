"""``python -m yiemagent.cli``: the ``yiemagent`` command."""

import sys

from .main import main

sys.exit(main())
