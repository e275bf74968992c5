"""What every client script shares: its arguments, the prompts, and how it reports.

Each script runs in its own virtual environment (the client's pinned release, as a user
installs it), calls the endpoint through the local SageMaker Runtime (or the container's
/v1), and prints one JSON object: case name to {"text": ...} or {"error": ...}.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

RUNTIME_URL, ENDPOINT, MAX_TOKENS = sys.argv[1], sys.argv[2], int(sys.argv[3])
PROMPT = "def fibonacci(n):"
MESSAGES = [{"role": "user", "content": PROMPT}]
# Dummy credentials: the local runtime checks none, botocore still signs.
os.environ.update(
    AWS_ACCESS_KEY_ID="local",
    AWS_SECRET_ACCESS_KEY="local",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_REGION_NAME="us-east-1",
    # LiteLLM fetches its price list from GitHub at import unless told not to.
    LITELLM_LOCAL_MODEL_COST_MAP="True",
)
# Libraries print to stdout too: the results are the line after this marker.
MARKER = "=== client results ==="


def runtime_client():
    import boto3
    from botocore.config import Config

    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=RUNTIME_URL,
        config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )


def chat_stream_text(raw: bytes) -> str:
    """The text of an OpenAI chat stream's server-sent events."""
    text = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            choices = json.loads(line[len("data: ") :])["choices"]
            text += choices[0]["delta"].get("content") or "" if choices else ""
    return text


def openai_chat(api, model: str, stream: bool) -> str:
    """The text of an OpenAI SDK chat call, whole or streamed (its chunks' deltas joined)."""
    answer = api.chat.completions.create(
        model=model, messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0, stream=stream
    )
    if not stream:
        return answer.choices[0].message.content
    return "".join(chunk.choices[0].delta.content or "" for chunk in answer if chunk.choices)


def report(cases: dict[str, Callable[[], str]]) -> None:
    results = {}
    for name, call in cases.items():
        try:
            results[name] = {"text": call()}
        except BaseException as error:  # noqa: BLE001 - every outcome is reported
            results[name] = {
                "error": f"{type(error).__name__}: {error}"[:2000],
                "trace": traceback.format_exc()[-3000:],
            }
    print(MARKER, json.dumps(results), sep="\n")


# The agent cases (tests/clients/test_agent_clients.py): one tool, a question it answers, and what
# the tool says back. Enums bound the arguments, so every answer can be checked against them.
TOOL_QUESTION = "What is the weather in Paris?"
CITIES = ["Paris", "Tokyo", "Lima"]
UNITS = ["celsius", "fahrenheit"]
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": CITIES},
        "unit": {"type": "string", "enum": UNITS},
    },
    "required": ["city", "unit"],
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now.",
        "parameters": WEATHER_SCHEMA,
    },
}


def weather(city: str, unit: str) -> str:
    return json.dumps({"sky": "clear", "temp": 21 if unit == "celsius" else 70, "city": city})


def outcome(calls: list, content: str | None = None, **more) -> str:
    """A case's result as text: the calls made, each (name, parsed arguments), and the words."""
    return json.dumps({"calls": calls, "content": content or None, **more})
