"""`python -m kraftform` runs the CLI."""

import sys

from kraftform.cli import main

sys.exit(main())
