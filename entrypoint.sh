#!/bin/sh
# Container entry point. `serve` (SageMaker's command) runs the front, which starts vLLM;
# `check` validates the model data sources without loading weights; anything else is run
# as given, e.g. `docker run IMAGE bash`.
set -e

case "$1" in
    serve | check)
        # exec: the server becomes PID 1 and receives SageMaker's SIGTERM itself.
        exec "${PYTHON:-python3}" -m serving "$@"
        ;;
esac

exec "$@"
