"""What the tests share, one module per concept, imported as `from tests.support.X import Y`.

- containers: the demo tree the suite serves and its shared containers (host or image),
  with the probes the tests read off them; `demo_env()`, `serve_until_exit()`.
- stalls: the watchers that tell "the product was slow" from "the machine held a CPU".
- interrupts: tests that stall, kill or stop a request in flight, and prove they did.
- agents: the demo tree with a chat template that writes tool calls.
- raw_http: HTTP as bytes on a socket, for what httpx would normalise or refuse.
- in_process: an ASGI app served by uvicorn in a thread of the test process.
- standin_container: the container stood in for without vLLM, to test the local runtime.
- scripted_container: the stand-in served in this process, and a socket server answering
  from a script, for the local runtime's client and end-to-end tests.
- local_runtime: the local SageMaker Runtime in this process, and boto3's client to it.
- cli: a laptop tool's command line run in this process; `fails()` for its usage errors.
- image_files: the Dockerfiles and docker-compose.yml as the packaging tests read them.
- preflight, deploy, capture: the helpers of tests/preflight, tests/deploy, tests/capture;
  rollout: the requests and options the deploy rollout tests share.
"""
