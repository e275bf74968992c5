"""`python -m bench COMMAND`: measure the serving container (the head's retraining and
rollout are rehearsed by `python -m rehearsals`).

  run         concurrency sweep against a URL or a SageMaker endpoint
  sweep       no speculation / EAGLE-3 K=3,5,7 / P-EAGLE K=3,5,7 on local containers
  crossover   no speculation and P-EAGLE at each K side by side at each concurrency: the
              fastest K per load, the batch-size schedule following it, the config to deploy
  overhead    the same load to the engine's Unix socket and through the front, interleaved
  load        N clients for T seconds; counts completed, refused, errors, lost; /ping latency
              (--body-mb 5: clients post 5 MiB chat payloads; /ping every 20 ms)
  prefix      prefix-aware routing against random over two containers, tenants sharing
              long system prompts: prefix-cache hit rate and TTFT side by side
  scrape      the same load with /metrics scraped every second and without, ABBA: scrape
              latency, and the throughput side by side
  lifecycle   cold start (front and bare vLLM side by side), the engine stalled and killed
              (time to /ping 503 and back to 200), docker stop: host process and image
  compare     containers of variants side by side, each a configuration, settings added to it
              (peagle:3+SERVING_CAPTURE_DIR=/tmp/c), or both: the cost of a setting
  fidelity    constrained tool calls and JSON against the target's free answers, with no
              whitespace allowed (vLLM's disable_any_whitespace) and with the container's bound
  transform   a Batch Transform job of 1,000 records beside real-time calls to the same
              container: records/s, tok/s against the best real-time level, lost records

run, overhead, load and scrape take --url of a running container, or --start CONFIG
(none, eagle3:K or peagle:K) to start a local one for the duration.
"""

from __future__ import annotations

import sys

from bench import (
    batch_transform,
    container_life,
    crossover,
    fidelity,
    load,
    overhead,
    prefix_routing,
    run,
    scrape,
    sweep,
    variants,
)
from bench.options import main_of

COMMANDS = (
    run, sweep, crossover, overhead, load, container_life, variants, fidelity,
    batch_transform, scrape, prefix_routing,
)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return main_of("python -m bench", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
