"""``python -m hf_bbpe.cli`` runs the same program as the ``hf-bbpe`` console script."""

import sys

from .main import main

sys.exit(main())
