"""``python -m kubehpc.cli``: the same as the ``kubehpc`` command."""

import sys

from kubehpc.cli.main import main

sys.exit(main())
