"""`python -m training train`: the training job as SageMaker Training runs it (the training
image's `train`). Any failure is a sentence in /opt/ml/output/failure and exit code 1."""

from __future__ import annotations

import sys
import traceback

from training.contract import ContractError, Layout, read_hyperparameters, write_failure
from training.job import run
from training.steps import log

USAGE = "usage: python -m training train  (SageMaker Training starts the image with `train`)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["train"]:
        print(USAGE, file=sys.stderr)
        return 2
    layout = Layout.from_environment()
    try:
        report = run(layout, read_hyperparameters(layout))
    except ContractError as error:
        write_failure(layout, str(error))
        log(f"failed: {error}")
        return 1
    except Exception as error:  # the job's log has the trace; the failure file the reason
        traceback.print_exc()
        write_failure(layout, f"{type(error).__name__}: {error}")
        return 1
    log(f"head written to {layout.model_dir} in {report.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
