"""``python -m nlsim`` is the ``nlsim`` command."""

import sys

from nlsim.cli import main

sys.exit(main())
