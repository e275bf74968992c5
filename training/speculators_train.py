"""`python -m training.speculators_train FLAGS`: speculators' `train` in this process, with
the CPU shims when there is no accelerator, and P-EAGLE honouring --no-embed-requires-grad
(peagle_embeddings.py). Its flags are speculators' own."""

from __future__ import annotations

import sys

from training import cpu_shims, peagle_embeddings

if __name__ == "__main__":
    if cpu_shims.needed():
        cpu_shims.apply()
    peagle_embeddings.apply()
    from speculators.train.cli import main
    from speculators.train.config import TrainConfig

    main(TrainConfig.resolve(sys.argv[1:]))
