"""LiteLLM's two SageMaker routes: `sagemaker_chat/` (OpenAI messages) and `sagemaker/`
(TGI's inputs and parameters), pointed at the local runtime by `sagemaker_base_url`."""

from __future__ import annotations

import litellm
from common import ENDPOINT, MAX_TOKENS, MESSAGES, RUNTIME_URL, report

INVOKE = f"{RUNTIME_URL}/endpoints/{ENDPOINT}/invocations"
STREAM = f"{INVOKE}-response-stream"


def call(route: str, stream: bool, **options) -> str:
    answer = litellm.completion(
        model=f"{route}/{ENDPOINT}",
        messages=MESSAGES,
        max_tokens=MAX_TOKENS,
        stream=stream,
        sagemaker_base_url=STREAM if stream else INVOKE,
        **options,
    )
    if not stream:
        return answer.choices[0].message.content
    return "".join(chunk.choices[0].delta.content or "" for chunk in answer if chunk.choices)


report(
    {
        "sagemaker_chat": lambda: call("sagemaker_chat", False, temperature=0),
        "sagemaker_chat stream": lambda: call("sagemaker_chat", True, temperature=0),
        # No temperature: LiteLLM sends 0 as 0.01 on this route; TGI's default is greedy.
        "sagemaker": lambda: call("sagemaker", False),
        "sagemaker stream": lambda: call("sagemaker", True),
    }
)
