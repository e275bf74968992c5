"""langchain-aws's ChatSagemakerEndpoint with tools, as LangChain's docs bind them:
`bind_tools`, then the call and the tool's answer sent back as a ToolMessage."""

from __future__ import annotations

from common import (
    ENDPOINT,
    MAX_TOKENS,
    TOOL_QUESTION,
    WEATHER_TOOL,
    outcome,
    report,
    runtime_client,
)
from langchain_aws.chat_models.sagemaker_endpoint import ChatSagemakerEndpoint
from langchain_calls import ChatHandler
from langchain_core.messages import HumanMessage


def bound() -> str:
    model = ChatSagemakerEndpoint(
        endpoint_name=ENDPOINT,
        client=runtime_client(),
        content_handler=ChatHandler(),
        model_kwargs={"max_tokens": MAX_TOKENS, "temperature": 0},
    )
    answer = model.bind_tools([WEATHER_TOOL]).invoke([HumanMessage(content=TOOL_QUESTION)])
    return outcome([[call["name"], call["args"]] for call in answer.tool_calls], answer.content)


report({"ChatSagemakerEndpoint bind_tools": bound})
