"""The OpenAI SDK on the container's own /v1 (docker run, compose): chat, sync and
streamed. The first argument is the container's URL here, not the runtime's."""

from __future__ import annotations

import openai
from common import MAX_TOKENS, MESSAGES, RUNTIME_URL, report

api = openai.OpenAI(base_url=f"{RUNTIME_URL}/v1", api_key="unused", max_retries=0)
MODEL = api.models.list().data[0].id


def chat(stream: bool) -> str:
    answer = api.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0, stream=stream
    )
    if not stream:
        return answer.choices[0].message.content
    return "".join(chunk.choices[0].delta.content or "" for chunk in answer if chunk.choices)


report({"chat": lambda: chat(False), "chat stream": lambda: chat(True)})
