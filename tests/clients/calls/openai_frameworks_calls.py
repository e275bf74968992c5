"""OpenAI-only agent frameworks, unchanged, on the local runtime's OpenAI-compatible path
with a bearer token the SageMaker SDK v3 made (SAGEMAKER_BEARER_TOKEN): the OpenAI Agents
SDK, pydantic-ai and LangChain's ChatOpenAI, each with plain text (whole and streamed), a
tool call and a structured answer, every call named after the endpoint as their users name
it. Each case reports the text, or the call (name and arguments) or object as JSON."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Literal

from common import (
    ENDPOINT,
    MAX_TOKENS,
    PROMPT,
    RUNTIME_URL,
    TOOL_QUESTION,
    WEATHER_TOOL,
    report,
    weather,
)
from pydantic import BaseModel

BASE_URL = f"{RUNTIME_URL}/endpoints/{ENDPOINT}/openai/v1"
TOKEN = os.environ["SAGEMAKER_BEARER_TOKEN"]
CITY_QUESTION = "Which city is sunny?"


class City(BaseModel):
    city: Literal["Paris", "Tokyo", "Lima"]
    sunny: bool


def agents_cases() -> dict:
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # traces would go to OpenAI, with an OpenAI key
    calls: list = []

    def model() -> OpenAIChatCompletionsModel:
        # A client for each run: each of run_sync's runs has an event loop of its own.
        client = AsyncOpenAI(base_url=BASE_URL, api_key=TOKEN, max_retries=0)
        return OpenAIChatCompletionsModel(model=ENDPOINT, openai_client=client)

    @function_tool
    def get_weather(
        city: Literal["Paris", "Tokyo", "Lima"], unit: Literal["celsius", "fahrenheit"]
    ) -> str:
        """The weather in a city now."""
        calls.append(["get_weather", {"city": city, "unit": unit}])
        return weather(city, unit)

    def writer() -> Agent:
        settings = ModelSettings(temperature=0, max_tokens=MAX_TOKENS)
        return Agent(name="writer", model=model(), model_settings=settings)

    def streamed() -> str:
        async def run() -> str:
            result = Runner.run_streamed(writer(), PROMPT)
            async for _ in result.stream_events():
                pass
            return result.final_output

        return asyncio.run(run())

    def tool_call() -> str:
        caller = Agent(
            name="caller", model=model(), tools=[get_weather],
            tool_use_behavior="stop_on_first_tool",
            model_settings=ModelSettings(temperature=0, max_tokens=64, tool_choice="required"),
        )  # fmt: skip
        Runner.run_sync(caller, TOOL_QUESTION, max_turns=2)
        return json.dumps(calls[0])

    def structured() -> str:
        agent = Agent(
            name="structured", model=model(), output_type=City,
            model_settings=ModelSettings(temperature=0, max_tokens=128),
        )  # fmt: skip
        return Runner.run_sync(agent, CITY_QUESTION).final_output.model_dump_json()

    return {
        "agents text": lambda: Runner.run_sync(writer(), PROMPT).final_output,
        "agents stream": streamed,
        "agents tool call": tool_call,
        "agents structured": structured,
    }


def pydantic_ai_cases() -> dict:
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(ENDPOINT, provider=OpenAIProvider(base_url=BASE_URL, api_key=TOKEN))
    settings = {"temperature": 0, "max_tokens": MAX_TOKENS}
    writer = Agent(model, model_settings=settings)

    async def streamed() -> str:
        async with writer.run_stream(PROMPT) as result:
            return "".join([piece async for piece in result.stream_text(delta=True)])

    def output(kind) -> str:
        agent = Agent(
            model, output_type=kind(City), model_settings={"temperature": 0, "max_tokens": 128}
        )
        return agent.run_sync(CITY_QUESTION).output.model_dump_json()

    return {
        "pydantic-ai text": lambda: writer.run_sync(PROMPT).output,
        "pydantic-ai stream": lambda: asyncio.run(streamed()),
        "pydantic-ai native output": lambda: output(NativeOutput),
    }


def langchain_cases() -> dict:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model=ENDPOINT, base_url=BASE_URL, api_key=TOKEN, temperature=0, max_tokens=MAX_TOKENS,
        max_retries=0,
    )  # fmt: skip

    def tool_call() -> str:
        bound = chat.bind_tools([WEATHER_TOOL], tool_choice="get_weather")
        (call,) = bound.invoke(TOOL_QUESTION, max_tokens=64).tool_calls
        return json.dumps([call["name"], call["args"]])

    def structured() -> str:
        longer = chat.model_copy(update={"max_tokens": 128})
        answer = longer.with_structured_output(City, method="json_schema").invoke(CITY_QUESTION)
        return answer.model_dump_json()

    return {
        "langchain text": lambda: chat.invoke(PROMPT).content,
        "langchain stream": lambda: "".join(chunk.content for chunk in chat.stream(PROMPT)),
        "langchain tool call": tool_call,
        "langchain structured": structured,
    }


report({**agents_cases(), **pydantic_ai_cases(), **langchain_cases()})
