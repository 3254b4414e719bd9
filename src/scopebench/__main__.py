"""``python -m scopebench``."""

import sys

from scopebench.cli import entry

sys.exit(entry())
