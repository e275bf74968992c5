"""The OpenAI SDK, unchanged, on the local runtime's OpenAI-compatible path with a bearer
token the SageMaker SDK v3 made (SAGEMAKER_BEARER_TOKEN): a chat named after the endpoint,
streamed, a named tool call, a structured answer, and the SDK's own error for an expired
token."""

from __future__ import annotations

import json
import os

import openai
from common import (
    CITIES,
    ENDPOINT,
    MESSAGES,
    RUNTIME_URL,
    TOOL_QUESTION,
    WEATHER_TOOL,
    openai_chat,
    report,
)

BASE_URL = f"{RUNTIME_URL}/endpoints/{ENDPOINT}/openai/v1"
api = openai.OpenAI(base_url=BASE_URL, api_key=os.environ["SAGEMAKER_BEARER_TOKEN"], max_retries=0)
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": CITIES}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
    "additionalProperties": False,
}


def tool_call() -> str:
    answer = api.chat.completions.create(
        model=ENDPOINT, messages=[{"role": "user", "content": TOOL_QUESTION}],
        tools=[WEATHER_TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=64, temperature=0,
    )  # fmt: skip
    (call,) = answer.choices[0].message.tool_calls
    return json.dumps([call.function.name, json.loads(call.function.arguments)])


def structured() -> str:
    answer = api.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Which city is sunny?"}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "city", "schema": CITY, "strict": True}},
        max_tokens=48, temperature=0,
    )  # fmt: skip
    return answer.choices[0].message.content


def without_token() -> str:
    client = openai.OpenAI(base_url=BASE_URL, api_key="not-a-token", max_retries=0)
    try:
        client.chat.completions.create(model=ENDPOINT, messages=MESSAGES, max_tokens=4)
    except openai.APIStatusError as error:
        return f"{type(error).__name__} {error.status_code}"
    return "answered"


report(
    {
        "chat": lambda: openai_chat(api, ENDPOINT, False),
        "chat stream": lambda: openai_chat(api, ENDPOINT, True),
        "named tool call": tool_call,
        "structured": structured,
        "not a token": without_token,
    }
)
