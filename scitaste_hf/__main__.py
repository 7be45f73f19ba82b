"""``python -m scitaste_hf`` runs the ``scitaste`` command."""

import sys

from scitaste_hf.cli import main

sys.exit(main())
