"""The export end to end: a Data Capture tree and the container's own files in, both training
files out, in a fixed order, with every skipped record counted by reason; and what Data Capture
writes for an endpoint `deploy --data-capture` made, read back."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from capture.export import Options, export
from capture.formats import OPENAI_FILE, SHAREGPT_FILE
from tests.support.capture import (
    chat_answer,
    chat_request,
    container_line,
    read_jsonl,
    sagemaker_line,
    vllm_stream,
    write_lines,
)

SSE = "text/event-stream"
HOUR = Path("datacapture/qwen-peagle/AllTraffic/2026/11/23")


def question(number: int) -> dict:
    return chat_request(f"Question {number}?")


def answer(number: int) -> dict:
    return chat_answer(f"Answer {number}.")


def with_bad_base64(line: str) -> str:
    record = json.loads(line)
    record["captureData"]["endpointInput"].update(data="not base64!", encoding="BASE64")
    return json.dumps(record, separators=(",", ":"))


@pytest.fixture()
def captures(tmp_path: Path) -> Path:
    """Two hours of Data Capture files (one line per invocation, both encodings) and one file
    of the container's own records, with the lines that cannot be used mixed in."""
    root = tmp_path / "captures"
    write_lines(
        root / HOUR / "16" / "0f3a-1.jsonl",
        [
            sagemaker_line(question(1), answer(1), encoding="JSON"),
            sagemaker_line(
                question(2) | {"stream": True}, vllm_stream(["Answer", " 2."]), None, SSE
            ),
            '{"captureData":{"endpointInput":{"observedContentType":"application/json","mo',
            with_bad_base64(sagemaker_line(question(9), answer(9))),
            sagemaker_line({"inputs": "Question?", "parameters": {}}, {"generated_text": "A"}),
        ],
    )
    write_lines(
        root / HOUR / "17" / "0f3a-2.jsonl",
        [
            sagemaker_line(question(1), answer(1), encoding="BASE64"),  # a repeat of hour 16's
            sagemaker_line(question(8), None),  # input-only capture
            "",
            sagemaker_line(question(3) | {"stream": True}, vllm_stream(["Answer 3."]), "JSON", SSE),
        ],
    )
    write_lines(
        root / "container" / "2026-11-23.jsonl",
        [
            container_line(question(4), answer(4)),
            container_line(question(5), {"error": {"message": "overloaded"}}, status=503),
            container_line(question(6), chat_answer("")),
            container_line(chat_request("x" * 40_000), answer(7)),
            '{"hello": "world"}',
            "[1, 2]",
        ],
    )
    return root


def contents(path: Path) -> list[str]:
    return [record["messages"][-1]["content"] for record in read_jsonl(path)]


def test_mixed_captures_become_one_training_set(captures: Path, tmp_path: Path) -> None:
    out = tmp_path / "train"
    summary = export(Options((captures,), out))
    # Sorted paths: the container's file, then the Data Capture hours in order.
    assert contents(out / OPENAI_FILE) == ["Answer 4.", "Answer 1.", "Answer 2.", "Answer 3."]
    assert (summary.files, summary.read, summary.written) == (3, 14, 4)
    assert dict(summary.skipped) == {
        "bad_encoding": 1,
        "duplicate": 1,
        "error_status": 1,
        "malformed_line": 2,
        "missing_payload": 1,
        "no_answer": 1,
        "not_chat": 1,
        "too_long": 1,
        "unknown_record": 1,
    }
    assert summary.line(out) == (
        f"read 14 records from 3 files; wrote 4 to {out} ({OPENAI_FILE}, {SHAREGPT_FILE}); "
        "skipped 10: bad_encoding 1, duplicate 1, error_status 1, malformed_line 2, "
        "missing_payload 1, no_answer 1, not_chat 1, too_long 1, unknown_record 1"
    )


def test_both_files_hold_the_same_conversations(captures: Path, tmp_path: Path) -> None:
    export(Options((captures,), tmp_path / "train"))
    openai = read_jsonl(tmp_path / "train" / OPENAI_FILE)
    sharegpt = read_jsonl(tmp_path / "train" / SHAREGPT_FILE)
    assert openai[0] == {
        "messages": [
            {"role": "user", "content": "Question 4?"},
            {"role": "assistant", "content": "Answer 4."},
        ]
    }
    assert sharegpt[0] == {
        "conversations": [
            {"from": "human", "value": "Question 4?"},
            {"from": "gpt", "value": "Answer 4."},
        ]
    }
    roles = {"user": "human", "assistant": "gpt", "system": "system"}
    assert [
        [{"from": roles[m["role"]], "value": m["content"]} for m in record["messages"]]
        for record in openai
    ] == [record["conversations"] for record in sharegpt]


def test_same_conversation_in_both_formats_is_kept_once(tmp_path: Path) -> None:
    write_lines(tmp_path / "in" / "a.jsonl", [container_line(question(1), answer(1))])
    write_lines(tmp_path / "in" / "b.jsonl", [sagemaker_line(question(1), answer(1), "BASE64")])
    summary = export(Options((tmp_path / "in",), tmp_path / "out"))
    assert (summary.written, dict(summary.skipped)) == (1, {"duplicate": 1})


def test_answer_and_conversation_length_limits(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "in.jsonl",
        [
            container_line(chat_request("Q?"), chat_answer("Yes.")),  # 4-character answer
            container_line(chat_request("Q" * 80), chat_answer("A long enough answer.")),
            container_line(chat_request("Q?"), chat_answer("A long enough answer.")),
        ],
    )
    options = Options((tmp_path / "in.jsonl",), tmp_path / "out", min_answer_chars=5, max_chars=60)
    summary = export(options)
    assert dict(summary.skipped) == {"short_answer": 1, "too_long": 1}
    assert contents(tmp_path / "out" / OPENAI_FILE) == ["A long enough answer."]


def test_system_prompt_where_none(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [container_line(question(1), answer(1))])
    export(Options((tmp_path / "in.jsonl",), tmp_path / "out", system="You are helpful."))
    [record] = read_jsonl(tmp_path / "out" / SHAREGPT_FILE)
    assert record["conversations"][0] == {"from": "system", "value": "You are helpful."}


def test_same_bytes_whatever_the_argument_order(captures: Path, tmp_path: Path) -> None:
    hour_16, hour_17 = captures / HOUR / "16", captures / HOUR / "17"
    export(Options((captures / "container", hour_16, hour_17), tmp_path / "one"))
    export(Options((hour_17, captures / "container", hour_16, hour_16), tmp_path / "two"))
    for name in (OPENAI_FILE, SHAREGPT_FILE):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_output_inside_the_inputs_is_not_read_back(captures: Path) -> None:
    out = captures / "train"
    first = export(Options((captures,), out))
    again = export(Options((captures,), out))
    assert (again.read, again.written) == (first.read, first.written)
    assert sorted(path.name for path in out.iterdir()) == [OPENAI_FILE, SHAREGPT_FILE]


def test_a_file_named_directly_needs_no_jsonl_suffix(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "capture.log", [container_line(question(1), answer(1))])
    assert export(Options((path,), tmp_path / "out")).written == 1


def test_crlf_and_a_last_line_without_newline(tmp_path: Path) -> None:
    lines = [container_line(question(1), answer(1)), container_line(question(2), answer(2))]
    path = tmp_path / "in.jsonl"
    path.write_bytes("\r\n".join(lines).encode())
    assert export(Options((path,), tmp_path / "out")).written == 2


def test_not_utf8_line_is_malformed(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"request": "\xff"}\n' + container_line(question(1), answer(1)).encode())
    summary = export(Options((path,), tmp_path / "out"))
    assert (summary.written, dict(summary.skipped)) == (1, {"malformed_line": 1})


def test_rerun_replaces_the_files(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [container_line(question(1), answer(1))])
    export(Options((path,), tmp_path / "out"))
    write_lines(path, [container_line(question(2), answer(2))])
    export(Options((path,), tmp_path / "out"))
    assert contents(tmp_path / "out" / OPENAI_FILE) == ["Answer 2."]
    assert json.loads((tmp_path / "out" / SHAREGPT_FILE).read_text())["conversations"][1] == {
        "from": "gpt",
        "value": "Answer 2.",
    }


def test_lone_surrogate_is_bad_encoding(tmp_path: Path) -> None:
    broken = container_line(chat_request("half an emoji \ud83d"), answer(1))
    assert "\\ud83d" in broken
    path = write_lines(tmp_path / "in.jsonl", [broken, container_line(question(2), answer(2))])
    summary = export(Options((path,), tmp_path / "out"))
    assert (summary.written, dict(summary.skipped)) == (1, {"bad_encoding": 1})


@pytest.mark.parametrize("seed", range(4))
def test_damaged_lines_are_counted_never_raised(captures: Path, tmp_path: Path, seed: int) -> None:
    """Bytes flipped, cut and dropped anywhere in the capture files: every line is still
    read and either kept or counted."""
    rng = random.Random(seed)
    for path in sorted(captures.rglob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")
        damaged = []
        for line in lines:
            if line and rng.random() < 0.7:
                at = rng.randrange(len(line))
                line = rng.choice(
                    [line[:at], line[:at] + bytes([rng.randrange(256)]) + line[at + 1 :]]
                )
            damaged.append(line.replace(b"\n", b""))
        path.write_bytes(b"\n".join(damaged))
    summary = export(Options((captures,), tmp_path / "out"))
    assert summary.read == summary.written + summary.skipped.total()
    assert summary.written == len(read_jsonl(tmp_path / "out" / OPENAI_FILE))


def data_capture_entry(mode: str, content_type: str, body: bytes, encoding: str) -> dict:
    """One side of an invocation as Data Capture writes it: the payload as text when the
    endpoint config lists its type (encoding JSON), else base64 (encoding BASE64)."""
    data = body.decode() if encoding == "JSON" else base64.b64encode(body).decode()
    return {"observedContentType": content_type, "mode": mode, "data": data, "encoding": encoding}


def test_what_data_capture_writes_for_a_deployed_endpoint(tmp_path: Path) -> None:
    """An hour of `deploy --data-capture` files, every form its CaptureContentTypeHeader
    leads to: a JSON request and answer, a "stream": true answer's event stream and a JSON
    Lines body (all listed, so as text), and a type it does not list (base64)."""
    from deploy.traffic_capture import JSON_CONTENT_TYPES

    assert {"application/json", SSE, "application/jsonlines"} <= set(JSON_CONTENT_TYPES)
    streamed = question(2) | {"stream": True}
    jsonlines = b"".join(json.dumps(question(n)).encode() + b"\n" for n in (3, 4))
    jsonlines_answers = json.dumps(answer(3)).encode() + b"\n"
    jsonlines_answers += b'{"error": {"message": "overloaded", "code": 503}}\n'
    sides = [
        (("application/json", json.dumps(question(1)).encode(), "JSON"),
         ("application/json", json.dumps(answer(1)).encode(), "JSON")),
        (("application/json", json.dumps(streamed).encode(), "JSON"),
         (SSE, vllm_stream(["Answer", " 2."]), "JSON")),
        (("application/jsonlines", jsonlines, "JSON"),
         ("application/jsonlines", jsonlines_answers, "JSON")),
        (("application/octet-stream", json.dumps(question(5)).encode(), "BASE64"),
         ("application/json", json.dumps(answer(5)).encode(), "JSON")),
    ]  # fmt: skip
    lines = [
        json.dumps(
            {
                "captureData": {
                    "endpointInput": data_capture_entry("INPUT", *request),
                    "endpointOutput": data_capture_entry("OUTPUT", *response),
                },
                "eventMetadata": {
                    "eventId": f"0b1c2d3e-0000-4000-8000-00000000000{number}",
                    "inferenceId": f"inference-{number}",
                    "inferenceTime": "2026-12-07T14:20:01Z",
                },
                "eventVersion": "0",
            },
            separators=(",", ":"),
        )
        for number, (request, response) in enumerate(sides)
    ]
    hour = tmp_path / "datacapture" / "qwen-peagle" / "AllTraffic" / "2026" / "12" / "07" / "14"
    write_lines(hour / "20-01-123-0b1c2d3e.jsonl", lines)
    summary = export(Options((tmp_path / "datacapture",), tmp_path / "out"))
    assert contents(tmp_path / "out" / OPENAI_FILE) == [
        "Answer 1.",
        "Answer 2.",
        "Answer 3.",
        "Answer 5.",
    ]
    # The JSON Lines body's two records count as two: one answered, one an error line.
    assert (summary.read, summary.written, dict(summary.skipped)) == (5, 4, {"error_status": 1})
