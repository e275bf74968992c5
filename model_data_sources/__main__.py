"""`python -m model_data_sources [OUT]`: build the demo pair under OUT (an /opt/ml tree).

Rebuilds only when the builder's source changed: a stamp file holds a hash of it.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

DEFAULT_OUT = Path("build/opt_ml")
CHANNEL = "eagle"


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def build(out: Path, force: bool = False) -> None:
    stamp = out / ".stamp"
    wanted = source_hash()
    if not force and stamp.is_file() and stamp.read_text() == wanted:
        print(f"demo model data sources up to date in {out}")
        return
    # Imported here so an up-to-date check costs no torch import.
    from model_data_sources.tiny import DrafterShape, TargetShape, build_drafter, build_target

    target_dir = out / "model"
    drafter_dir = out / "additional-model-data-sources" / CHANNEL
    for directory in (target_dir, drafter_dir):
        shutil.rmtree(directory, ignore_errors=True)
    target = build_target(target_dir, TargetShape())
    build_drafter(drafter_dir, target, target_dir, DrafterShape())
    stamp.write_text(wanted)
    print(f"built demo target in {target_dir} and P-EAGLE head in {drafter_dir}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_data_sources", description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args(argv)
    build(args.out, args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
