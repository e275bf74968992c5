"""A laptop tool's command line run in this process, as its tests run it: the exit code and
what it printed. `run` is the tool's own `run(argv, out, err, **options)` (deploy, capture)."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

Run = Callable[..., int]


def run_cli(run: Run, argv: Sequence[str], **options: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `run(argv, out, err, **options)`."""
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err, **options)
    return code, out.getvalue(), err.getvalue()


def fails(run: Run, argv: Sequence[str], *fragments: str, **options: Any) -> str:
    """Exit 2, every fragment in one `error:` line, nothing on stdout, no traceback; the
    error output."""
    code, out, err = run_cli(run, argv, **options)
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert any(all(fragment in line for fragment in fragments) for line in lines), err
    assert "Traceback" not in err and not out
    return err
