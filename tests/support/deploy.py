"""Helpers for the deploy tests: real boto3 clients that never reach AWS, a clock that never
sleeps, a small fake target/head pair, SageMaker's descriptions of an endpoint and a component,
and the command line as the tests run it (`run_cli(deploy_cli, argv)`, tests.support.cli)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TextIO

import boto3
import botocore.session
from botocore.config import Config
from botocore.stub import Stubber

from deploy.__main__ import run
from deploy.clients import Connect, Connection
from deploy.waiting import Clock
from tests.support.preflight import write_safetensors

REGION = "us-west-2"
NO_RETRIES = Config(retries={"max_attempts": 0})
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecutionRole"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/sagemaker-vllm-peagle:latest"
TARGET_URI = "s3://my-bucket/qwen/model/"
HEAD_URI = "s3://my-bucket/qwen/eagle/"
VERSION = "20250601120000"
ENDPOINT = "qwen-peagle"
VERSIONED = "qwen-peagle-20250601120000"
ACCOUNT_ARN = "arn:aws:sagemaker:us-west-2:123456789012"
WHEN = datetime(2025, 6, 1, 12, 0, 0)
SPEC = (
    '{"model": "/opt/ml/additional-model-data-sources/eagle", "method": "eagle3", '
    '"num_speculative_tokens": 7, "parallel_drafting": true}'
)


@functools.cache
def shared_session() -> boto3.Session:
    # One botocore session for every test client: it loads each service model once.
    core = botocore.session.get_session()
    core.set_credentials("testing", "testing")
    return boto3.Session(botocore_session=core, region_name=REGION)


def client(service: str, endpoint_url: str | None = None):
    return shared_session().client(service, endpoint_url=endpoint_url, config=NO_RETRIES)


@dataclass
class Stubbed:
    """A Connection whose clients answer only what each test queued on their Stubbers."""

    services: tuple[str, ...] = ("sagemaker", "application-autoscaling", "s3", "cloudwatch")
    stubbers: dict[str, Stubber] = field(default_factory=dict)
    connection: Connection | None = None

    def __post_init__(self) -> None:
        clients = {service: client(service) for service in self.services}
        self.stubbers = {service: Stubber(made) for service, made in clients.items()}
        for stubber in self.stubbers.values():
            stubber.activate()
        self.connection = Connection(session=None, region=REGION, made=clients)

    @property
    def sagemaker(self) -> Stubber:
        return self.stubbers["sagemaker"]

    @property
    def autoscaling(self) -> Stubber:
        return self.stubbers["application-autoscaling"]

    @property
    def cloudwatch(self) -> Stubber:
        return self.stubbers["cloudwatch"]

    def connect(self, profile, region, endpoint_url) -> Connection:
        return self.connection

    def assert_done(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


class FakeClock(Clock):
    """Time moves only when the code sleeps."""

    def __init__(self) -> None:
        super().__init__(poll_seconds=30.0)
        self.time = 0.0
        self.now = lambda: self.time
        self.sleep = self.advance

    def advance(self, seconds: float) -> None:
        self.time += seconds


def never_connect(profile, region, endpoint_url):
    raise AssertionError("the command connected to AWS, but it should have stopped before")


def deploy_cli(
    argv: Sequence[str],
    out: TextIO,
    err: TextIO,
    connect_to: Connect = never_connect,
    clock: Clock | None = None,
) -> int:
    """deploy's command line kept from AWS (unless given `connect_to`) and from real sleeps."""
    return run(argv, out, err, connect_to=connect_to, clock=clock or FakeClock())


def deploy_argv(*extra: str, name: str = "qwen-peagle") -> list[str]:
    return [
        "deploy",
        "--name", name,
        "--image", IMAGE,
        "--role", ROLE,
        "--target-uri", TARGET_URI,
        "--head-uri", HEAD_URI,
        *extra,
    ]  # fmt: skip


def parse_json_stream(text: str) -> list[dict]:
    """JSON objects printed one after another (what the dry run writes)."""
    decoder, found, position = json.JSONDecoder(), [], 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        value, position = decoder.raw_decode(text, position)
        found.append(value)
    return found


def endpoint(status: str, config: str = VERSIONED, **extra) -> dict:
    """DescribeEndpoint's answer for ENDPOINT."""
    return {
        "EndpointName": ENDPOINT,
        "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}",
        "EndpointConfigName": config,
        "EndpointStatus": status,
        "CreationTime": WHEN,
        "LastModifiedTime": WHEN,
        **extra,
    }


def component(status: str, **extra) -> dict:
    """DescribeInferenceComponent's answer for ENDPOINT's component."""
    return {
        "InferenceComponentName": "qwen-peagle-ic",
        "InferenceComponentArn": f"{ACCOUNT_ARN}:inference-component/qwen-peagle-ic",
        "EndpointName": ENDPOINT,
        "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}",
        "InferenceComponentStatus": status,
        "Specification": {"ModelName": VERSIONED},
        "CreationTime": WHEN,
        "LastModifiedTime": WHEN,
        **extra,
    }


def client_error(code: str, message: str, status: int = 400) -> dict:
    return {"service_error_code": code, "service_message": message, "http_status_code": status}


HIDDEN, VOCAB, LAYERS = 128, 1024, 8


def zeros(dtype: str, *shape: int) -> tuple[str, list[int], bytes]:
    count = 1
    for size in shape:
        count *= size
    return (dtype, list(shape), bytes(count * 2))


def fake_pair(root: Path, trained_positions: int = 8) -> tuple[Path, Path]:
    """A Llama target (config only) and a P-EAGLE head (config and header-true weights)."""
    target, head = root / "target", root / "head"
    target.mkdir(parents=True)
    head.mkdir(parents=True)
    (target / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": HIDDEN,
                "num_hidden_layers": LAYERS,
                "vocab_size": VOCAB,
            }
        )
    )
    (target / "model.safetensors").write_bytes(b"\0" * 4096)
    (head / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLMEagle3"],
                "model_type": "llama",
                "hidden_size": HIDDEN,
                "target_hidden_size": HIDDEN,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "num_key_value_heads": 2,
                "head_dim": 64,
                "intermediate_size": 384,
                "vocab_size": VOCAB,
                "draft_vocab_size": VOCAB,
                "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
                "ptd_token_id": 4,
                "parallel_drafting": True,
                "num_speculative_tokens_trained": trained_positions,
            }
        )
    )
    write_safetensors(
        head / "model.safetensors",
        {
            "fc.weight": zeros("F16", HIDDEN, 3 * HIDDEN),
            "mask_hidden": zeros("F16", 1, 3 * HIDDEN),
            "lm_head.weight": zeros("F16", VOCAB, HIDDEN),
        },
    )
    return target, head
