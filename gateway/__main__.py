"""`python -m gateway`: the same as the `parsegate` command."""

import sys

from gateway.cli import main

sys.exit(main())
