"""The frames of a bidirectional-stream session, without a socket (serving/bidi_frames.py)."""

from __future__ import annotations

import json

import pytest

from serving import bidi_frames as frames


def test_a_request_frame_is_its_payload_and_an_id():
    parsed = frames.parse(json.dumps({"id": "t1", "messages": [], "max_tokens": 3}))
    assert parsed == frames.Invoke("t1", {"messages": [], "max_tokens": 3})
    assert frames.parse('{"prompt": "x"}') == frames.Invoke(None, {"prompt": "x"})
    assert frames.parse('{"type": "cancel", "id": 4}') == frames.Cancel(4)
    assert frames.parse('{"type": "cancel"}') == frames.Cancel(None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "not JSON"),
        ('"hello"', "JSON str"),
        ('{"id": [1], "prompt": "x"}', "'id' is a JSON list"),
        ('{"id": "", "prompt": "x"}', "1 to 256 characters"),
        ('{"type": "stop", "id": 1}', "unknown frame type"),
    ],
)
def test_a_frame_the_session_cannot_act_on_says_why(text, says):
    with pytest.raises(frames.FrameProblem, match=says):
        frames.parse(text)


def test_requests_stream_with_their_usage_unless_they_ask_for_a_whole_answer():
    chat = {"messages": [], "stream_options": {"continuous_usage_stats": True}}
    assert frames.streamed(chat) == {
        "messages": [],
        "stream": True,
        "stream_options": {"continuous_usage_stats": True, "include_usage": True},
    }
    assert frames.streamed({"prompt": "x", "stream": False}) == {"prompt": "x", "stream": False}
    assert frames.streamed({"inputs": "x"}) == {"inputs": "x", "stream": True}
    # A TGI batch cannot stream: it is answered whole.
    assert frames.streamed({"inputs": ["x", "y"]}) == {"inputs": ["x", "y"]}


def test_the_engines_chunks_are_carried_as_it_wrote_them():
    data = '{"choices": [{"delta": {"content": "é"}}]}'
    frame = json.loads(frames.chunk("t", data))
    assert frame == {"id": "t", "type": "chunk", "data": json.loads(data)}
    assert json.loads(frames.chunk(1, "not json"))["data"] == "not json"
    error = json.loads(frames.error(None, 400, "bad"))
    assert error == {
        "id": None,
        "type": "error",
        "error": {"message": "bad", "type": "BadRequest", "param": None, "code": 400},
    }
