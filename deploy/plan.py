"""One deployment, decided: everything the requests are built from, already checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from deploy import names
from deploy.routing import Observability, Routing
from deploy.s3 import S3Prefix
from deploy.sizing import Sizing
from deploy.traffic_capture import DataCapture, Tracing

Metric = Literal["concurrency", "invocations", "backlog"]
# The CUDA release of the default base, vllm/vllm-openai:v0.32.0 (its -cu129 tag: 12.9).
DEFAULT_IMAGE_CUDA = "13.0"
DEFAULT_INSTANCE_TYPE = "ml.g7e.2xlarge"
DEFAULT_NUM_SPECULATIVE_TOKENS = 7
DEFAULT_CANARY_PERCENT = 10
DEFAULT_BAKE_SECONDS = 600
# The new head's alarm threshold, against the current head's last hour, when none is given.
DEFAULT_ACCEPTANCE_FLOOR = 0.9


@dataclass(frozen=True)
class AsyncInference:
    """An asynchronous endpoint: requests read from S3, answers written there, queued."""

    output: S3Prefix
    failure: S3Prefix
    success_topic: str | None = None
    error_topic: str | None = None
    max_concurrent_invocations: int | None = None
    # Autoscaling down to no instance while the queue is empty, woken by the backlog.
    scale_to_zero: bool = False


@dataclass(frozen=True)
class Component:
    """The model as an inference component on the endpoint, instead of the variant's model."""

    name: str
    accelerators: int
    memory_mb: int
    copies: int


@dataclass(frozen=True)
class Autoscaling:
    min_capacity: int
    max_capacity: int
    target_value: float
    metric: Metric


@dataclass(frozen=True)
class Guard:
    """How an existing endpoint moves onto the new head: a canary share of its capacity first,
    watched for `bake_seconds`, rolled back by SageMaker when an alarm fires."""

    canary_percent: int = DEFAULT_CANARY_PERCENT
    bake_seconds: int = DEFAULT_BAKE_SECONDS
    # None: 0.9 x the current head's acceptance over the last hour, read when deploying.
    min_acceptance: float | None = None


@dataclass(frozen=True)
class Plan:
    endpoint_name: str
    version: str  # UTC timestamp: names this run's model and endpoint config
    image_uri: str
    role_arn: str
    target: S3Prefix
    head: S3Prefix
    num_speculative_tokens: int
    instance_type: str
    sizing: Sizing
    instance_count: int = 1
    extra_environment: Mapping[str, str] = field(default_factory=dict)
    inference_ami_version: str | None = None
    component: Component | None = None
    autoscaling: Autoscaling | None = None
    guard: Guard = field(default_factory=Guard)
    # K by batch size ([first, last, K] ranges; num_speculative_tokens is the largest K).
    batch_schedule: tuple[tuple[int, int, int], ...] | None = None
    asynchronous: AsyncInference | None = None
    routing: Routing = field(default_factory=Routing)
    observability: Observability = field(default_factory=Observability)
    # What SageMaker keeps of the traffic: one of the two, or neither.
    data_capture: DataCapture | None = None
    tracing: Tracing | None = None

    @property
    def head_version(self) -> str:
        """Names the head in the metrics' HeadVersion dimension: this run's version."""
        return self.version

    @property
    def model_name(self) -> str:
        return names.versioned_name(self.endpoint_name, self.version)

    @property
    def endpoint_config_name(self) -> str:
        return names.versioned_name(self.endpoint_name, self.version)
