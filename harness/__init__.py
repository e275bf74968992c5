"""Start the serving container for a test or a benchmark, the way SageMaker runs it.

    import httpx

    from harness.host import HostContainer, host_environment
    from harness.locations import default_opt_ml_root

    env = host_environment(OPT_ML_ROOT=str(default_opt_ml_root()))
    with HostContainer("demo", env).start() as container:
        container.wait_ready()  # pings /ping with SageMaker's 2 s timeout until the first 200
        chat = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8}
        print(httpx.post(f"{container.url}/invocations", json=chat).json())
    # Leaving the block stops it: SIGTERM (the front drains), SIGKILL if still up 40 s later.

`host_environment()` is this shell's environment without its container settings (SM_*,
SAGEMAKER_*, SERVING_*), the demo's defaults, then yours: SM_VLLM_SPECULATIVE_CONFIG for
P-EAGLE, for instance. Every container writes its output to `log_path`; `tail()` reads it.

- `container`: what every backend offers (`start`, `wait_ready`, `url`, `log_text`,
  `engine_socket`, `kill_engine`, `stop`), and `free_port()`.
- `host`: `entrypoint.sh serve` as a process group on this machine.
- `docker`: `docker run IMAGE serve`, the demo tree mounted read-only at /opt/ml.
- `paths`: the checkout and the demo trees `make` builds; `default_opt_ml_root()`.
- `configurations`: the vocabulary of speculation configurations (`none`, `eagle3:K`,
  `peagle:K`, K by batch size) and the ones `make serve` serves by name.
- `demo_engine`: the demo engine's settings, from demo.env.

The tests' shared containers (tests/conftest.py, tests/support/containers.py) and the
benchmark's (bench.configuration.LocalContainer) are built on these. Nothing here is in the
image: the Dockerfile copies only serving/.
"""
