"""Batch Transform: JSON Lines bodies answered line by line, and /execution-parameters.

The `scheduled` container runs in a transform job's environment (tests/conftest.py); the
`peagle` one is a real-time endpoint.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from harness.locations import REPO_ROOT
from local_runtime.transform_job import Parameters, TransformFailed, mini_batches
from serving import transform
from serving.settings import load_settings
from tests.conftest import TRANSFORM_JOB_ENV

CHAT = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 16,
    "temperature": 0,
}
COMPLETION = {"prompt": "class Stack:", "max_tokens": 16, "temperature": 0}
TGI = {"inputs": "import numpy as np", "parameters": {"max_new_tokens": 16}}
# Far beyond the demo's 2,048-token context.
TOO_LONG = {"prompt": "hello " * 5000, "max_tokens": 4}


def lines(*payloads) -> bytes:
    return b"".join(
        (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n" for p in payloads
    )


def alone(url: str, payload: dict) -> dict | list:
    answer = httpx.post(f"{url}/invocations", json=payload, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


def text_of(answer: dict | list) -> str:
    if isinstance(answer, list):  # TGI
        return answer[0]["generated_text"]
    choice = answer["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


@pytest.mark.parametrize(
    "content_type, body, batch_mode, expected",
    [
        ("application/jsonlines", b'{"a": 1}\n{"b": 2}\n', False, [b'{"a": 1}', b'{"b": 2}']),
        ("application/x-jsonlines; charset=utf-8", b'{"a": 1}\n', False, [b'{"a": 1}']),
        # A transform job's MultiRecord body under the job's ContentType (JSON), CRLF too.
        ("application/json", b'{"a": 1}\r\n\r\n{"b": 2}', True, [b'{"a": 1}', b'{"b": 2}']),
        # One document written over several lines is one request, job or not.
        ("application/json", b'{\n  "a": 1\n}\n', True, None),
        ("application/json", b'{"a": 1}\n', True, None),
        # Outside a job a JSON body is one request: its malformed JSON keeps its 400.
        ("application/json", b'{"a": 1}\n{"b": 2}\n', False, None),
    ],
)
def test_which_bodies_are_records(content_type, body, batch_mode, expected):
    records = transform.split(body, transform.is_jsonlines(content_type), batch_mode)
    assert (None if records is None else list(records)) == expected


def test_execution_parameters_follow_the_job_else_the_defaults():
    settings = load_settings({"OPT_ML_ROOT": "/nonexistent", "HF_MODEL_ID": "org/model"})
    assert not settings.batch
    assert transform.execution_parameters(
        settings.max_concurrent_transforms, settings.batch_strategy, settings.max_payload_mb
    ) == {"MaxConcurrentTransforms": 4, "BatchStrategy": "MultiRecord", "MaxPayloadInMB": 6}
    job = load_settings(
        {"OPT_ML_ROOT": "/nonexistent", "HF_MODEL_ID": "org/model", **TRANSFORM_JOB_ENV}
        | {"SAGEMAKER_BATCH_STRATEGY": "single_record"}
    )
    assert job.batch
    assert transform.execution_parameters(
        job.max_concurrent_transforms, job.batch_strategy, job.max_payload_mb
    ) == {"MaxConcurrentTransforms": 3, "BatchStrategy": "SingleRecord", "MaxPayloadInMB": 20}


def test_the_job_reads_its_execution_parameters(scheduled):
    answer = httpx.get(f"{scheduled.url}/execution-parameters", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {
        "MaxConcurrentTransforms": 3,
        "BatchStrategy": "MultiRecord",
        "MaxPayloadInMB": 20,
    }


def test_a_mini_batch_gets_one_line_per_record_in_order_bad_ones_included(scheduled):
    good = [CHAT, COMPLETION, TGI, {**CHAT, "max_tokens": 8}, {**COMPLETION, "prompt": "x = ["}]
    expected = [text_of(alone(scheduled.url, payload)) for payload in good]
    body = lines(
        good[0],
        b"this is not json",
        good[1],
        {"question": "neither chat, completion nor TGI"},
        good[2],
        {**CHAT, "stream": True},
        good[3],
        TOO_LONG,
        good[4],
    )
    answer = httpx.post(
        f"{scheduled.url}/invocations",
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/jsonlines")
    assert answer.text.endswith("\n")
    answers = [json.loads(line) for line in answer.text.splitlines()]
    assert len(answers) == 9
    good_answers = [answers[index] for index in (0, 2, 4, 6, 8)]
    # Each good record answered in its own schema, with what it gets alone (greedy).
    assert [text_of(a) for a in good_answers] == expected
    assert good_answers[0]["object"] == "chat.completion"
    assert good_answers[1]["object"] == "text_completion"
    assert isinstance(good_answers[2], list) and "generated_text" in good_answers[2][0]
    # Each record's own speculation stays with it.
    for answer in (good_answers[0], good_answers[1], good_answers[3]):
        assert answer["metrics"]["speculative_decoding"]["mean_acceptance_length"] >= 1.0
    errors = {index: answers[index]["error"] for index in (1, 3, 5, 7)}
    assert {index: error["code"] for index, error in errors.items()} == {
        1: 400,
        3: 400,
        5: 400,
        7: 400,
    }
    assert "not valid JSON" in errors[1]["message"]
    assert "neither 'messages' nor 'prompt'" in errors[3]["message"]
    assert "stream" in errors[5]["message"]
    assert "context" in errors[7]["message"] or "maximum" in errors[7]["message"]


def test_a_real_time_endpoint_answers_json_lines_too(peagle):
    expected = [text_of(alone(peagle.url, payload)) for payload in (CHAT, COMPLETION)]
    answer = httpx.post(
        f"{peagle.url}/invocations",
        content=lines(CHAT, COMPLETION),
        headers={"Content-Type": "application/jsonlines"},
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    assert [text_of(json.loads(line)) for line in answer.text.splitlines()] == expected
    empty = httpx.post(
        f"{peagle.url}/invocations",
        content=b"\n \n",
        headers={"Content-Type": "application/jsonlines"},
        timeout=60,
    )
    assert empty.status_code == 400 and "no records" in empty.json()["error"]["message"]
    # The same lines sent as one JSON request outside a job stay a 400 for bad JSON.
    refused = httpx.post(
        f"{peagle.url}/invocations",
        content=lines(CHAT, COMPLETION),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert refused.status_code == 400
    assert "not valid JSON" in refused.json()["error"]["message"]


def local_transform(url: str, source, output, *options: str) -> subprocess.CompletedProcess:
    """`python -m local_runtime transform` against the container at `url`."""
    command = ["transform", str(source), str(output), "--container-url", url, *options]
    return subprocess.run(
        [sys.executable, "-m", "local_runtime", *command],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_local_transform_job_runs_like_the_service(scheduled, tmp_path):
    """`python -m local_runtime transform`: execution parameters, mini-batches, assembly in
    order, the join; one bad record costs one error line."""
    prompts = [f"def function_{number}(x):" for number in range(11)]
    records = [{"prompt": prompt, "max_tokens": 8, "temperature": 0} for prompt in prompts]
    records.insert(5, {"question": "not a payload"})
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records))
    output = tmp_path / "out.jsonl"
    result = local_transform(scheduled.url, source, output, "--join-source", "input")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "MaxConcurrentTransforms=3" in result.stdout
    assert "12 records in 1 mini-batches" in result.stdout
    assert "1 records answered with an error line" in result.stdout
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line.get("prompt") for line in lines] == [r.get("prompt") for r in records]
    assert lines[5]["SageMakerOutput"]["error"]["code"] == 400
    good = [line for index, line in enumerate(lines) if index != 5]
    expected = [text_of(alone(scheduled.url, record)) for record in records if "prompt" in record]
    assert [text_of(line["SageMakerOutput"]) for line in good] == expected


def test_single_record_sends_one_record_per_call(scheduled, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(COMPLETION) + "\n" + json.dumps(CHAT) + "\n")
    output = tmp_path / "out.jsonl"
    result = local_transform(scheduled.url, source, output, "--batch-strategy", "SingleRecord")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 records in 2 mini-batches" in result.stdout
    answers = [json.loads(line) for line in output.read_text().splitlines()]
    assert [text_of(answer) for answer in answers] == [
        text_of(alone(scheduled.url, COMPLETION)),
        text_of(alone(scheduled.url, CHAT)),
    ]


def test_mini_batches_stay_under_the_payload_limit():
    parameters = Parameters(
        max_concurrent_transforms=1, batch_strategy="MultiRecord", max_payload_mb=1
    )
    records = [b"x" * (300 * 1024)] * 7
    batches = list(mini_batches(records, parameters))
    assert [len(batch) for batch in batches] == [3, 3, 1]
    with pytest.raises(TransformFailed, match="record 1 is .* over MaxPayloadInMB"):
        list(mini_batches([b"x" * (2 * 1024 * 1024)], parameters))


@pytest.mark.parametrize(
    "status, body, line",
    [
        # vLLM's own error passes as it came, whole.
        (
            400,
            b'{"error": {"message": "too long", "type": "BadRequestError", '
            b'"param": null, "code": 400}}',
            {
                "error": {
                    "message": "too long",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                }
            },
        ),
        # Anything else keeps the engine's status and says what it said.
        (
            502,
            b"Bad Gateway",
            {"error": {"message": "Bad Gateway", "type": "BadGateway", "param": None, "code": 502}},
        ),
    ],
)
def test_a_records_engine_error_keeps_its_status_and_message(status, body, line):
    from types import SimpleNamespace

    answer = SimpleNamespace(status=status, parsed=None)
    prepared = SimpleNamespace(tgi=None)
    assert transform.answer_of(prepared, answer, body) == (status, line)


def test_a_record_answered_200_with_no_json_is_a_502():
    from types import SimpleNamespace

    answer = SimpleNamespace(status=200, parsed=None)
    status, line = transform.answer_of(SimpleNamespace(tgi=None), answer, b"<html>")
    assert status == 502 and "not JSON" in line["error"]["message"]
