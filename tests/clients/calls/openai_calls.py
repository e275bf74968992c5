"""The OpenAI SDK on the container's own /v1 (docker run, compose): chat, sync and
streamed. The first argument is the container's URL here, not the runtime's."""

from __future__ import annotations

import openai
from common import RUNTIME_URL, openai_chat, report

api = openai.OpenAI(base_url=f"{RUNTIME_URL}/v1", api_key="unused", max_retries=0)
MODEL = api.models.list().data[0].id


report(
    {
        "chat": lambda: openai_chat(api, MODEL, False),
        "chat stream": lambda: openai_chat(api, MODEL, True),
    }
)
