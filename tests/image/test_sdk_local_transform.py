"""A Batch Transform run by the SageMaker Python SDK's local mode against the image: an
implementation of the batch protocol that nobody here wrote (it starts the image with docker
compose, waits for /ping, takes the batch strategy and payload limit from
/execution-parameters, posts the lines as mini-batches and assembles the answers by line).

The model travels as SageMaker's transform jobs take it: one model.tar.gz, the target at its
root and the head under eagle/ (`sagemaker-peagle-deploy upload --pack`)."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from deploy.model_tarball import pack
from harness.docker import container_settings
from harness.serving_container import free_port
from image_build.docker_daemon import ensure_compose, ensure_engine
from serving import paths
from tests.support.client_envs import CALLS, MARKER, client_python
from tests.support.containers import DEMO_ROOT, PEAGLE_CONFIG, demo_env

SDK_ENV = "sagemaker-v2"
SCRIPT = "sagemaker_v2_transform.py"
CHAT_PROMPTS = ["def fibonacci(n):", "def is_prime(n):", "def reverse(text):"]
RECORDS = [
    *(
        {"messages": [{"role": "user", "content": prompt}], "max_tokens": 24, "temperature": 0}
        for prompt in CHAT_PROMPTS
    ),
    {"inputs": "def add(a, b):", "parameters": {"max_new_tokens": 16}},
    {"prompt": "def parse(text):", "max_tokens": 16, "temperature": 0},
]
BAD_LINE = "not json"
BAD_INDEX = 2  # where the bad line sits among the records


def answer_text(answer: dict | list) -> str:
    """The generated text of a chat, completion or TGI answer."""
    if isinstance(answer, list):
        return answer[0]["generated_text"]
    choice = answer["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


def remove_compose_leftovers(image: str) -> None:
    """Local mode's compose `down` stops the job's container but leaves it: remove it."""
    docker = ensure_engine()
    listed = subprocess.run(
        [docker, "ps", "-aq", "--filter", f"ancestor={image}",
         "--filter", "label=com.docker.compose.project"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if ids := listed.stdout.split():
        subprocess.run([docker, "rm", "-f", *ids], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def sdk_job(image, tmp_path_factory) -> tuple[dict, list[str]]:
    """The job the SDK ran: its description and the output file's lines."""
    ensure_compose()  # local mode runs docker compose; Debian's docker-compose when none
    root = tmp_path_factory.mktemp("sdk-transform")
    (root / "model").mkdir()
    pack(
        DEMO_ROOT / "model",
        paths.channel_dir(DEMO_ROOT),
        root / "model" / "model.tar.gz",
    )
    (root / "input").mkdir()
    lines = [json.dumps(record) for record in RECORDS]
    lines.insert(BAD_INDEX, BAD_LINE)
    (root / "input" / "records.jsonl").write_text("\n".join(lines) + "\n")
    environment = container_settings(demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)))
    job = {
        "image": image,
        "model_url": f"file://{root / 'model'}",
        "input_url": f"file://{root / 'input'}",
        "output_url": f"file://{root / 'output'}",
        "serving_port": free_port(),
        "environment": environment,
        "content_type": "application/jsonlines",
    }
    try:
        done = subprocess.run(
            [str(client_python(SDK_ENV)), str(CALLS / SCRIPT), json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        remove_compose_leftovers(image)
    _, marker, reported = done.stdout.partition(MARKER + "\n")
    assert marker, f"{SCRIPT} reported nothing (exit {done.returncode}):\n{done.stderr[-3000:]}"
    result = json.loads(reported)
    assert "error" not in result, f"{result['error']}\n{result['trace']}\n{done.stdout[-4000:]}"
    output = (root / "output" / "records.jsonl.out").read_text()
    return result["description"], output.splitlines()


def test_the_sdk_job_completes_in_multi_record_batches(sdk_job):
    description, _ = sdk_job
    assert description["TransformJobStatus"] == "Completed"
    # Not given to the Transformer: the SDK took it from GET /execution-parameters (its own
    # default is the same; the error line below shows the records shared one body).
    assert description["BatchStrategy"] == "MultiRecord"


def test_every_record_of_the_sdk_job_is_answered_in_its_place_as_if_sent_alone(sdk_job, peagle):
    _, lines = sdk_job
    answers = [json.loads(line) for line in lines if line]
    assert len(answers) == len(RECORDS) + 1
    # An error line among answers: the bad record shared a body with the others (alone, it
    # would have failed the SDK's call, and the job with it).
    error = answers.pop(BAD_INDEX)
    assert error["error"]["code"] == 400
    assert "not valid JSON" in error["error"]["message"]
    for record, answer in zip(RECORDS, answers, strict=True):
        alone = httpx.post(f"{peagle.url}/invocations", json=record, timeout=120)
        assert alone.status_code == 200, alone.text
        assert answer_text(answer) == answer_text(alone.json()), record
        if isinstance(answer, dict):  # OpenAI answers carry their own speculation figures
            drafted = answer["metrics"]["speculative_decoding"]["num_draft_tokens"]
            assert drafted > 0, answer["metrics"]
