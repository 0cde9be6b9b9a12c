"""``python -m bayeval.cli``: the ``bayeval`` command."""

from bayeval.cli import main

main(prog_name="bayeval")
