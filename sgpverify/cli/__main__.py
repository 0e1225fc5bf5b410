"""``python -m sgpverify.cli``: the ``sgpverify`` command."""

import sys

from . import main

sys.exit(main())
