"""/invocations-bidirectional-stream on the real engine: one WebSocket carries several
requests at once, each answered in frames carrying its id, the same answer `/invocations`
gives; a cancel frame or a closed socket stops vLLM's generation; every bad frame gets an
error frame and the session goes on (the protocol: serving/bidi_frames.py)."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.serving.test_relay import LONG, assert_aborted, wait_idle
from tests.support.bidi import (
    ENDINGS,
    chat_text,
    completion_text,
    faults,
    open_session,
    receive,
    send,
    socket_url,
    until_ended,
    until_type,
)
from tests.support.containers import PEAGLE_MAX_CONCURRENT
from tests.support.interrupts import interrupted

CHAT = {
    "messages": [{"role": "user", "content": "Write a Python function that adds two numbers."}],
    "max_tokens": 32,
    "temperature": 0,
}
COMPLETION = {"prompt": "def fibonacci(n):", "max_tokens": 24, "temperature": 0}
TGI = {"inputs": "def quicksort(items):", "parameters": {"max_new_tokens": 16}}


def test_requests_on_one_session_answer_by_id_as_invocations_does(peagle):
    with open_session(peagle.url) as session:
        # Four requests in flight at once on one socket, of every kind /invocations takes.
        send(session, {"id": "chat", **CHAT})
        send(session, {"id": 7, **COMPLETION})
        send(session, {"id": "tgi", **TGI})
        send(session, {"id": "whole", **CHAT, "stream": False})
        frames = until_ended(session, {"chat", 7, "tgi", "whole"})
    with httpx.Client(base_url=peagle.url, timeout=120) as http:
        chat = http.post("/invocations", json=CHAT).json()
        completion = http.post("/invocations", json=COMPLETION).json()
        tgi = http.post("/invocations", json=TGI).json()

    for request_id, kind in (("chat", "chunk"), (7, "chunk"), ("tgi", "chunk")):
        *body, last = frames[request_id]
        assert last["type"] == "done", last
        assert body and {frame["type"] for frame in body} == {kind}
    assert chat_text(frames["chat"]) == chat["choices"][0]["message"]["content"]
    assert completion_text(frames[7]) == completion["choices"][0]["text"]
    # TGI's token events, the last one with the whole text.
    assert frames["tgi"][-2]["data"]["generated_text"] == tgi[0]["generated_text"]
    # The final frame: the usage, and the request's own speculation (P-EAGLE is on).
    done = frames["chat"][-1]
    assert done["usage"]["completion_tokens"] == chat["usage"]["completion_tokens"]
    assert done["speculation"]["num_draft_tokens"] > 0
    assert done["speculation"]["mean_acceptance_length"] >= 1
    # "stream": false: one whole answer, then done.
    answer, whole_done = frames["whole"]
    assert answer["type"] == "answer"
    assert answer["data"]["choices"][0]["message"] == chat["choices"][0]["message"]
    assert whole_done["type"] == "done" and whole_done["usage"] == answer["data"]["usage"]


def test_a_second_turn_goes_while_the_first_streams(peagle):
    with open_session(peagle.url) as session:
        send(session, {"id": "first", **LONG, "max_tokens": 200})
        until_type(session, "first", "chunk")
        turn = {**CHAT, "messages": [*CHAT["messages"], {"role": "assistant", "content": "ok"}]}
        turn["messages"].append({"role": "user", "content": "Now subtract them."})
        send(session, {"id": "second", **turn})
        frames = until_ended(session, {"first", "second"})
    assert frames["second"][-1]["type"] == "done"
    # The second turn was answered while the first still streamed.
    assert frames["first"][-1]["type"] == "done"
    first_chunks = [frame for frame in frames["first"] if frame["type"] == "chunk"]
    assert len(first_chunks) > 1


def test_a_cancel_frame_stops_the_generation_and_the_session_goes_on(peagle):
    with open_session(peagle.url) as session:
        outcomes: list[list[dict]] = []

        def leave() -> None:
            send(session, {"id": "long", **LONG, "stream": True})
            until_type(session, "long", "chunk")  # vLLM is generating
            send(session, {"type": "cancel", "id": "long"})
            frames = until_ended(session, {"long"})["long"]
            outcomes.append(frames)
            if frames[-1]["type"] == "done":
                # It ran whole before the cancel landed (assert_aborted tells by the
                # machine's holds): the cancel then names no request in flight.
                assert receive(session)["error"]["code"] == 404

        assert_aborted(peagle, leave)
        # The attempt that aborted vLLM's generation (a chunk had come before the cancel)
        # ended in `cancelled`, after any chunks still on their way.
        *chunks, cancelled = outcomes[-1]
        assert cancelled["type"] == "cancelled", cancelled
        assert all(frame["type"] == "chunk" for frame in chunks), chunks
        # Cancelling all: both requests stop; an id no longer in flight is an error.
        send(session, {"id": "a", **LONG})
        send(session, {"id": "b", **LONG})
        until_type(session, "a", "chunk")
        send(session, {"type": "cancel"})
        ended = until_ended(session, {"a", "b"})
        assert [frames[-1]["type"] for frames in ended.values()] == ["cancelled", "cancelled"]
        send(session, {"type": "cancel", "id": "a"})
        error = receive(session)
        assert (error["id"], error["type"], error["error"]["code"]) == ("a", "error", 404)
        send(session, {"id": "after", **CHAT})
        assert until_ended(session, {"after"})["after"][-1]["type"] == "done"
    wait_idle(peagle)
    assert peagle.metric("serving_bidi_cancels_total") >= 3


def session_with_a_cancel(url: str, payloads: list[dict]) -> dict:
    """All of `payloads` sent at once on one session, the second cancelled after its first
    frame; every frame by id until each has ended and the cancel has been answered."""
    with open_session(url) as session:
        for number, payload in enumerate(payloads):
            send(session, {"id": number, **payload, "stream": True})
        frames: dict = {number: [] for number in range(len(payloads))}
        open_ids, cancelled = set(frames), False
        while open_ids or not any(
            frame["type"] == "cancelled" or frame.get("error", {}).get("code") == 404
            for frame in frames[1]
        ):
            frame = receive(session)
            frames[frame["id"]].append(frame)
            if frame["type"] in ENDINGS:
                open_ids.discard(frame["id"])
            if not cancelled and frame["id"] == 1:
                send(session, {"type": "cancel", "id": 1})
                cancelled = True
    return frames


def test_sessions_at_once_with_a_cancel_each_lose_reorder_and_double_no_frame(peagle):
    """Two sessions at once, three streamed requests in flight on each (six: within the
    container's MAX_CONCURRENT_REQUESTS) and the second of them cancelled: every id's frames
    are chunks and then one ending; a done one's text is the greedy answer /invocations gives,
    a cancelled one's a beginning of it."""
    payloads = [
        {**CHAT, "max_tokens": 48},
        {**CHAT, "messages": [{"role": "user", "content": "def fibonacci(n):"}]},
        {**CHAT, "messages": [{"role": "user", "content": "class Stack:"}], "max_tokens": 24},
    ]
    references = [
        httpx.post(f"{peagle.url}/invocations", json=payload, timeout=120).json()["choices"][0][
            "message"
        ]["content"]
        for payload in payloads
    ]
    outcomes: list[dict] = []
    sessions = [
        threading.Thread(
            target=lambda: outcomes.append(session_with_a_cancel(peagle.url, payloads))
        )
        for _ in range(2)
    ]
    for session in sessions:
        session.start()
    for session in sessions:
        session.join(300)
    assert len(outcomes) == 2
    found = [
        fault
        for frames in outcomes
        for number, reference in enumerate(references)
        for fault in faults(frames[number], reference)
    ]
    assert found == []
    assert all(frames[0][-1]["type"] == frames[2][-1]["type"] == "done" for frames in outcomes)


def test_the_frame_check_finds_a_lost_a_reordered_and_a_doubled_frame():
    def chunk(text: str) -> dict:
        return {"type": "chunk", "data": {"choices": [{"delta": {"content": text}}]}}

    done, cancelled = {"type": "done"}, {"type": "cancelled"}
    late_404 = {"type": "error", "error": {"code": 404}}
    reference = "abc"
    assert faults([chunk("a"), chunk("b"), chunk("c"), done], reference) == []
    assert faults([chunk("a"), cancelled], reference) == []
    assert faults([chunk("a"), chunk("b"), chunk("c"), done, late_404], reference) == []
    assert faults([chunk("a"), chunk("c"), done], reference)  # lost
    assert faults([chunk("b"), chunk("a"), chunk("c"), done], reference)  # reordered
    assert faults([chunk("b"), cancelled], reference)  # a cancelled text must begin it
    assert faults([chunk("abc"), done, done], reference)  # doubled ending
    assert faults([chunk("ab"), done, chunk("c")], reference)  # a frame after the end
    assert faults([chunk("abc")], reference)  # no ending


def test_closing_the_socket_stops_its_requests(peagle):
    def leave() -> None:
        with open_session(peagle.url) as session:
            send(session, {"id": 1, **LONG})
            until_type(session, 1, "chunk")

    assert_aborted(peagle, leave)
    assert peagle.metric("serving_bidi_sessions_open") == 0
    assert peagle.metric("serving_requests_in_flight") == 0


BAD_FRAMES = [
    ("not json", "not JSON", None),
    ("[1, 2]", "JSON list", None),
    (json.dumps({"id": True, **CHAT}), "'id'", None),
    (json.dumps({"id": "t", "type": "resume"}), "unknown frame type", "t"),
]
# Payloads /invocations refuses (the front's check, vLLM's): the same answer, as a frame.
BAD_PAYLOADS = [{"max_tokens": 3}, {"messages": "hello"}, {"prompt": "x", "max_tokens": -1}]


def test_every_bad_frame_gets_an_error_frame_and_the_session_lives(peagle, client):
    with open_session(peagle.url) as session:
        for text, says, request_id in BAD_FRAMES:
            session.send(text)
            error = receive(session)
            assert error["type"] == "error" and error["id"] == request_id, (text, error)
            assert error["error"]["code"] == 400 and says in error["error"]["message"], error
        for number, payload in enumerate(BAD_PAYLOADS):
            send(session, {"id": number, **payload})
            error = receive(session)
            refused = client.post("/invocations", json=payload)
            assert (error["id"], error["type"]) == (number, "error"), error
            assert error["error"]["code"] == refused.status_code == 400
            assert error["error"]["message"] == refused.json()["error"]["message"]
        session.send(b'{"id": "binary"}')
        error = receive(session)
        assert error["type"] == "error" and "binary frames" in error["error"]["message"]
        # Over the payload limit (SAGEMAKER_MAX_PAYLOAD_IN_MB, 6 MB by default).
        session.send(json.dumps({"id": "big", "prompt": "x" * (6 * 1024 * 1024)}))
        error = receive(session)
        assert error["error"]["code"] == 413, error
        # An id already in flight.
        send(session, {"id": "twice", **LONG})
        send(session, {"id": "twice", **CHAT})
        frames = until_type(session, "twice", "error")
        assert frames[-1]["error"]["code"] == 409
        send(session, {"type": "cancel", "id": "twice"})
        until_type(session, "twice", "cancelled")
        # The session still serves.
        send(session, {"id": "good", **CHAT})
        assert until_ended(session, {"good"})["good"][-1]["type"] == "done"


def test_more_requests_than_the_container_takes_are_refused_one_by_one(peagle):
    """Admitted as they arrive: the first MAX_CONCURRENT_REQUESTS run, the one past them is
    refused as an /invocations call would be, and the session goes on. Only while all of the
    first are still running is the last one over the limit: an attempt in which one ended
    first (the client held off the CPU between two frames) proves nothing, and is tried again."""
    ids = list(range(PEAGLE_MAX_CONCURRENT + 1))
    *first, last = ids

    def attempt() -> str | None:
        wait_idle(peagle)
        with open_session(peagle.url) as session:
            for request_id in ids:
                send(session, {"id": request_id, **LONG, "max_tokens": 600})
            frames = until_ended(session, {last})
            ended_first = [i for i in first if frames[i] and frames[i][-1]["type"] in ENDINGS]
            for request_id in first:
                send(session, {"type": "cancel", "id": request_id})
            frames = {**frames, **until_ended(session, set(first) - set(ended_first))}
        if ended_first:
            return f"requests {ended_first} ended before the one past the limit was read"
        over = frames[last][-1]
        assert (over["type"], over["error"]["code"]) == ("error", 429), over
        # Admitted, so never refused: each is cancelled now (or ran to its end just before).
        assert {frames[i][-1]["type"] for i in first} <= {"cancelled", "done"}, frames
        return None

    interrupted("requests past the limit", attempt)


def test_the_route_is_a_websocket_only(peagle):
    answer = httpx.get(f"{peagle.url}/invocations-bidirectional-stream", timeout=30)
    assert answer.status_code == 426
    assert "WebSocket" in answer.json()["error"]["message"]
    with pytest.raises(InvalidStatus) as refused:
        connect(socket_url(peagle.url, "/ping"), open_timeout=30, proxy=None, legacy=True)
    assert refused.value.response.status_code == 403
