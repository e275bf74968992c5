# The serving image: vLLM's image with our SageMaker front on top. SageMaker starts it as
# `docker run IMAGE serve`; the front listens on 8080 (or SAGEMAKER_BIND_TO_PORT) and runs
# vLLM as its child. The base is vLLM's CUDA image of the release in versions.env, which
# image_build passes; this default serves a plain `docker build` (tests/deps/test_deps.py
# keeps it in step). The CPU image is this file on docker/cpu-base (make image-cpu): every
# step below runs in CI.
ARG BASE_IMAGE=vllm/vllm-openai:v0.32.0

# The training image (`--target training`; make image-train-cpu): SageMaker Training starts it
# as `docker run IMAGE train`. The head trainer (training/) on the same base, with speculators;
# the serving image below is built without any of it. Behind a proxy the build gets the
# machine's pip settings as secrets (image_build), stored in no layer.
FROM ${BASE_IMAGE} AS training
LABEL org.opencontainers.image.title="sagemaker-vllm-peagle-training" \
      org.opencontainers.image.description="SageMaker training container: a P-EAGLE head for your target from captured traffic"
ENV PYTHONUNBUFFERED=1
WORKDIR /opt/program
# The base's vLLM first: P-EAGLE runs on the release this image maintains it on, and on no
# other (vLLM removed it in 0.34); one sentence and a failed build, before any other step.
COPY serving/preflight/vllm_release.py /tmp/vllm_release.py
RUN python3 /tmp/vllm_release.py && rm /tmp/vllm_release.py
# The head trainer's packages beyond the base's, from the lock (deps/training.lock: datasets,
# hs-connectors and what they need, and speculators), each with --no-deps: speculators'
# torchvision and torchaudio do not load beside the base's torch, and torch must stay exactly
# the base's. By hash on the CPU base's Python; by version on the CUDA image's (deps/).
COPY deps /tmp/deps/deps
COPY versions.env /tmp/deps/
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf \
    --mount=type=secret,id=ca.pem,target=/run/secrets/ca.pem \
    PYTHONPATH=/tmp/deps python3 -m deps install --layers training \
    && rm -rf /tmp/deps \
    && python3 -c "import speculators.train.cli, transformers, vllm"
# Our fixes to vLLM itself (vllm_patches/), as in the serving image: the job runs vLLM too.
COPY vllm_patches /tmp/vllm_patches/vllm_patches
COPY versions.env /tmp/vllm_patches/
RUN PYTHONPATH=/tmp/vllm_patches python3 -m vllm_patches apply && rm -rf /tmp/vllm_patches
COPY pyproject.toml ./
COPY serving ./serving
COPY training ./training
RUN python3 -m pip install --no-cache-dir --no-deps --no-build-isolation . \
    && rm -rf build ./*.egg-info \
    && python3 -I -c "import training.job"
ENTRYPOINT ["python3", "-m", "training"]
CMD ["train"]

# The serving image, the default target.
FROM ${BASE_IMAGE} AS serving

LABEL org.opencontainers.image.title="sagemaker-vllm-peagle" \
      org.opencontainers.image.description="SageMaker serving container for vLLM with P-EAGLE parallel speculative decoding" \
      com.amazonaws.sagemaker.capabilities.accept-bind-to-port=true \
      com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true

# As in the training stage: the base's vLLM, first.
COPY serving/preflight/vllm_release.py /tmp/vllm_release.py
RUN python3 /tmp/vllm_release.py && rm /tmp/vllm_release.py

# tini is PID 1: it reaps vLLM workers orphaned by a crash and passes signals to the front,
# which drains on SIGTERM and then stops vLLM.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

# Logs go straight to CloudWatch, unbuffered. The CUDA release of the base (NVIDIA's images
# set CUDA_VERSION; the CPU base has none) is recorded, so the preflight can compare it with
# the host's driver before anything loads (serving/preflight/cuda_driver.py).
ENV PYTHONUNBUFFERED=1 \
    SERVING_CUDA_VERSION=${CUDA_VERSION}
LABEL com.amazonaws.sagemaker.peagle.cuda-version="${CUDA_VERSION}"

EXPOSE 8080

COPY --chmod=755 entrypoint.sh /usr/local/bin/entrypoint.sh

# vLLM resolves each architecture it serves (target, drafter) in a fresh subprocess unless its
# model-info cache already knows it, and a new container's cache is empty. Filled here for
# every architecture vLLM registers, so any model's start skips those subprocesses. Only this
# one module is copied for it, so the layer stays cached while the rest of the code changes.
WORKDIR /opt/program
COPY serving/model_info_cache.py /tmp/model_info_cache.py
RUN python3 -I /tmp/model_info_cache.py && rm /tmp/model_info_cache.py

# Our fixes to vLLM itself (vllm_patches/, each described there), applied to the base's vLLM
# source; the step fails if the patched code has moved. The patches are not kept in the image.
COPY vllm_patches /tmp/vllm_patches/vllm_patches
COPY versions.env /tmp/vllm_patches/
RUN PYTHONPATH=/tmp/vllm_patches python3 -m vllm_patches apply && rm -rf /tmp/vllm_patches

# The front only: the benchmark and the demo-model trainer stay out of the image. Our code is
# the last layer, so a code change rebuilds in seconds.
COPY pyproject.toml ./
COPY serving ./serving
# --no-deps: vLLM, torch, Starlette, uvicorn (with websockets), aiohttp and pydantic come with
# the base image and must stay exactly as vLLM was built. --no-build-isolation: setuptools
# comes with it too, so this step needs no network. The import from outside the source tree (-I) proves the
# installed package finds everything it needs.
RUN uv pip install --python python3 --no-cache --no-deps --no-build-isolation . \
    && rm -rf build ./*.egg-info \
    && python3 -I -c "import serving.server, websockets"

# Docker's own view of readiness (SageMaker sends its own /ping). /ping is 503 until vLLM
# has loaded the model, so a large model gets a long start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30m --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + (os.environ.get('SAGEMAKER_BIND_TO_PORT') or '8080') + '/ping', timeout=4)"]

# Replaces the base image's `vllm serve` entry point.
ENTRYPOINT ["tini", "--", "/usr/local/bin/entrypoint.sh"]
CMD ["serve"]
