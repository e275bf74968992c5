"""`python -m model_data_sources.public_shapes ROOT`: see the package's docstring."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model_data_sources.public_shapes import write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_data_sources.public_shapes")
    parser.add_argument("root", type=Path, nargs="?", default=Path("build/public_shapes"))
    args = parser.parse_args(argv)
    for folder in write(args.root):
        print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
