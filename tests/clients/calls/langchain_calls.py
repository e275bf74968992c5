"""langchain-aws: ChatSagemakerEndpoint (OpenAI messages) and SagemakerEndpoint (the LLM
class, TGI payload) with the content handlers a user writes, sync and streamed."""

from __future__ import annotations

import json

from common import ENDPOINT, MAX_TOKENS, PROMPT, report, runtime_client
from langchain_aws.chat_models.sagemaker_endpoint import (
    ChatModelContentHandler,
    ChatSagemakerEndpoint,
)
from langchain_aws.llms.sagemaker_endpoint import LLMContentHandler, SagemakerEndpoint
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage


def sse_data(line: bytes) -> dict | None:
    """A stream line's JSON, or None for blank lines and the end marker."""
    text = line.decode().strip()
    if not text.startswith("data:") or text == "data: [DONE]":
        return None
    return json.loads(text[len("data:") :])


class ChatHandler(ChatModelContentHandler):
    content_type = "application/json"
    accepts = "application/json"

    def transform_input(self, messages, model_kwargs) -> bytes:
        # LangChain hands over the messages as OpenAI's role/content dicts already.
        return json.dumps({"messages": messages, **model_kwargs}).encode()

    def transform_output(self, output):
        if isinstance(output, bytes):  # a stream line
            chunk = sse_data(output)
            choices = chunk.get("choices") if chunk else None
            return AIMessageChunk(
                content=choices[0]["delta"].get("content") or "" if choices else ""
            )
        answer = json.loads(output.read())
        return AIMessage(content=answer["choices"][0]["message"]["content"])


class TgiHandler(LLMContentHandler):
    # content_type left at LangChain's default, text/plain, as many users leave it.

    def transform_input(self, prompt: str, model_kwargs) -> bytes:
        return json.dumps({"inputs": prompt, **model_kwargs}).encode()

    def transform_output(self, output) -> str:
        if isinstance(output, bytes):  # a stream line: a TGI event, or a whole JSON answer
            if output.strip().startswith(b"["):
                return json.loads(output)[0]["generated_text"]
            event = sse_data(output)
            return event["token"]["text"] if event else ""
        return json.loads(output.read())[0]["generated_text"]


def chat(stream: bool) -> str:
    kwargs = {"max_tokens": MAX_TOKENS, "temperature": 0, **({"stream": True} if stream else {})}
    model = ChatSagemakerEndpoint(
        endpoint_name=ENDPOINT,
        client=runtime_client(),
        content_handler=ChatHandler(),
        model_kwargs=kwargs,
    )
    messages = [HumanMessage(content=PROMPT)]
    if not stream:
        return model.invoke(messages).content
    return "".join(chunk.content for chunk in model.stream(messages))


def llm(stream: bool, stream_in_body: bool = True) -> str:
    kwargs = {"parameters": {"max_new_tokens": MAX_TOKENS}}
    if stream and stream_in_body:
        kwargs["stream"] = True
    model = SagemakerEndpoint(
        endpoint_name=ENDPOINT,
        client=runtime_client(),
        content_handler=TgiHandler(),
        model_kwargs=kwargs,
        streaming=stream,
    )
    if not stream:
        return model.invoke(PROMPT)
    return "".join(model.stream(PROMPT))


if __name__ == "__main__":
    report(
        {
            "ChatSagemakerEndpoint": lambda: chat(False),
            "ChatSagemakerEndpoint stream": lambda: chat(True),
            "SagemakerEndpoint": lambda: llm(False),
            "SagemakerEndpoint stream": lambda: llm(True),
            # A user who forgets "stream": true gets one JSON answer on the stream; its newline
            # lets LangChain's line reader end instead of spinning.
            "SagemakerEndpoint stream, no stream in body": lambda: llm(True, stream_in_body=False),
        }
    )
