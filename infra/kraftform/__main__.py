"""`python -m kraftform` runs the CLI."""

from kraftform.cli import run

run()
