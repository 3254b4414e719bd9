"""``python -m scopebench``."""

import sys

from scopebench.cli import main

sys.exit(main())
