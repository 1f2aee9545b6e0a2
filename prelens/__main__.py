"""``python -m prelens``: the command line (see ``prelens.cli``)."""

from prelens.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
