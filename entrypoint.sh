#!/bin/sh
# Container entry point. `serve` (SageMaker's command) runs the front, which starts vLLM;
# anything else is run as given, e.g. `docker run IMAGE bash`.
set -e

if [ "$1" = "serve" ]; then
    shift
    # exec: the server becomes PID 1 and receives SageMaker's SIGTERM itself.
    exec "${PYTHON:-python3}" -m serving serve "$@"
fi

exec "$@"
