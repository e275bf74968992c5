"""Facts about vLLM's command line that the environment rules depend on.

NEGATABLE_FLAGS are the boolean flags for which vLLM's parser also accepts a `--no-` form
(argparse.BooleanOptionalAction); SWITCH_FLAGS the boolean flags without one (store_true);
MULTI_VALUE_FLAGS the flags that take several values (nargs '+' or '*').
tests/serving/test_vllm_flags.py checks every table against the installed vLLM, so a vLLM upgrade
that changes one fails the tests instead of the endpoint.
"""

from __future__ import annotations

from serving.variables import VLLM_PREFIX

# Flags the container itself owns: setting them through SM_VLLM_* would break the front.
RESERVED_FLAGS = {
    "host": "the engine listens on a private socket only, behind the front",
    "port": "the engine's transport is internal; set SAGEMAKER_BIND_TO_PORT for the front's port",
    "uds": "the front owns the engine's transport",
    "headless": "the front needs vLLM's HTTP API server, which headless mode does not start",
    "grpc": "the front speaks HTTP to the engine; a gRPC server in its place never answers it",
    **{
        flag: "the front talks plain HTTP to the engine over its private socket; terminate TLS "
        "in front of the container"
        for flag in (
            "ssl-keyfile",
            "ssl-certfile",
            "ssl-ca-certs",
            "ssl-cert-reqs",
            "ssl-ciphers",
            "enable-ssl-refresh",
        )
    },
}


def flag_value(engine_flags: tuple[str, ...], *names: str) -> str | None:
    """The value the last of `names` (e.g. "--tensor-parallel-size", "-tp") has among the
    engine flags, as `--flag value` or `--flag=value`; argparse keeps the last. None if unset."""
    value = None
    for position, flag in enumerate(engine_flags):
        name, equals, inline = flag.partition("=")
        if name in names:
            following = engine_flags[position + 1 : position + 2]
            value = inline if equals else (following[0] if following else "")
    return value


# Shortcut flags for the speculative config: vLLM rejects them when --speculative-config
# sets the same key, and the preflight refuses any mix (one source of truth).
SPECULATIVE_SHORTCUT_FLAGS = ("spec-method", "spec-model", "spec-tokens")


def shortcut_flags(engine_flags: tuple[str, ...]) -> list[tuple[str, str]]:
    """(variable, value) for each SM_VLLM_SPEC_* shortcut among the engine flags."""
    found = []
    for name in SPECULATIVE_SHORTCUT_FLAGS:
        value = flag_value(engine_flags, f"--{name}")
        if value is not None:
            found.append((VLLM_PREFIX + name.upper().replace("-", "_"), value))
    return found


SWITCH_FLAGS = frozenset(
    {
        "aggregate-engine-logging",
        "data-parallel-multi-port-external-lb",
        "disable-log-stats",
        "grpc",
        "headless",
    }
)

# Each whitespace-separated word of SM_VLLM_SERVED_MODEL_NAME="a b" is one value: two names.
MULTI_VALUE_FLAGS = frozenset(
    {
        "allowed-media-domains",
        "api-key",
        "collect-detailed-traces",
        "cpu-offload-params",
        "cudagraph-capture-sizes",
        "ignore-patterns",
        "kv-cache-dtype-skip-layers",
        "logits-processors",
        "lora-modules",
        "lora-target-modules",
        "numa-bind-cpus",
        "numa-bind-nodes",
        "offload-params",
        "served-model-name",
        "sleep-preserve-parameter-names",
    }
)

NEGATABLE_FLAGS = frozenset(
    {
        "allow-credentials",
        "allow-deprecated-quantization",
        "async-scheduling",
        "cohere-is-reasoning-model",
        "cudagraph-metrics",
        "data-parallel-external-lb",
        "data-parallel-hybrid-lb",
        "dcp-q-replicate",
        "disable-cascade-attn",
        "disable-chunked-mm-input",
        "disable-custom-all-reduce",
        "disable-fastapi-docs",
        "disable-hybrid-kv-cache-manager",
        "disable-nccl-for-dp-synchronization",
        "disable-sliding-window",
        "disable-uvicorn-access-log",
        "enable-auto-tool-choice",
        "enable-batch-sharded-sampling",
        "enable-chunked-prefill",
        "enable-cumem-allocator",
        "enable-dbo",
        "enable-elastic-ep",
        "enable-ep-weight-filter",
        "enable-eplb",
        "enable-expert-parallel",
        "enable-fault-tolerance",
        "enable-flash-late-interaction",
        "enable-flashinfer-autotune",
        "enable-force-include-usage",
        "enable-hc-sp",
        "enable-layerwise-nvtx-tracing",
        "enable-log-deltas",
        "enable-log-outputs",
        "enable-log-requests",
        "enable-logging-iteration-details",
        "enable-lora",
        "enable-mamba-cache-stochastic-rounding",
        "enable-mamba-shared-prefix-checkpoint",
        "enable-mfu-metrics",
        "enable-mixed-moe-lora-format",
        "enable-mm-embeds",
        "enable-moe-shared-loras",
        "enable-nccl-comm-suspend",
        "enable-offline-docs",
        "enable-per-request-metrics",
        "enable-prefix-caching",
        "enable-prompt-embeds",
        "enable-prompt-tokens-details",
        "enable-request-id-headers",
        "enable-return-routed-experts",
        "enable-scale-out",
        "enable-server-load-tracking",
        "enable-shm-tensor-arena",
        "enable-sleep-mode",
        "enable-ssl-refresh",
        "enable-tokenizer-info-endpoint",
        "enable-tower-connector-lora",
        "enable-trace-replay",
        "enforce-eager",
        "exclude-tools-when-tool-choice-none",
        "fail-on-environ-validation",
        "fully-sharded-loras",
        "interleave-mm-strings",
        "jit-monitor-verbose",
        "kv-cache-metrics",
        "kv-sharing-fast-prefill",
        "language-model-only",
        "log-error-stack",
        "long-prefill-token-threshold-adaptive",
        "mm-device-do-normalize",
        "mm-encoder-only",
        "numa-bind",
        "ray-workers-use-nsight",
        "return-sampling-mask",
        "return-tokens-as-token-ids",
        "scheduler-reserve-full-isl",
        "skip-mm-profiling",
        "skip-tokenizer-init",
        "sleep-mode-offload-cudagraph",
        "specialize-active-lora",
        "swa-bounded-replay",
        "tokens-only",
        "trust-remote-code",
        "trust-request-chat-template",
        "trust-request-mm-kwargs",
        "use-fp64-gumbel",
        "use-replayssm",
        "use-tqdm-on-load",
    }
)
