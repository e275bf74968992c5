"""Strands Agents' `SageMakerAIModel` through the local runtime, as its docs show it: an agent
with one Python tool, streamed (Strands' default) and not. The runtime is reached through
botocore's `AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME`: Strands builds its own client and takes no URL.
"""

from __future__ import annotations

import os

from common import ENDPOINT, MAX_TOKENS, RUNTIME_URL, TOOL_QUESTION, outcome, report, weather

os.environ["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] = RUNTIME_URL

from typing import Literal  # noqa: E402

from botocore.config import Config  # noqa: E402
from strands import Agent, tool  # noqa: E402
from strands.models.sagemaker import SageMakerAIModel  # noqa: E402

# A loop that calls the tool again and again is ended after this many calls (and reported).
MAX_CALLS = 3


def run(stream: bool) -> str:
    runs = []

    @tool
    def get_weather(
        city: Literal["Paris", "Tokyo", "Lima"], unit: Literal["celsius", "fahrenheit"]
    ) -> str:
        """The weather in a city now.

        Args:
            city: The city.
            unit: The unit of the temperature.
        """
        runs.append(city)
        if len(runs) >= MAX_CALLS:
            agent.cancel(after_current_tools=True)
        return weather(city, unit)

    model = SageMakerAIModel(
        endpoint_config={"endpoint_name": ENDPOINT, "region_name": "us-east-1"},
        payload_config={"max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream},
        boto_client_config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )
    agent = Agent(model=model, tools=[get_weather], callback_handler=None)
    result = agent(TOOL_QUESTION)
    # What the model asked for, in order, as the agent recorded it.
    calls = [
        [block["toolUse"]["name"], block["toolUse"]["input"]]
        for message in agent.messages
        for block in message["content"]
        if "toolUse" in block
    ]
    text = "".join(block.get("text", "") for block in result.message["content"])
    return outcome(calls, text, stop_reason=str(result.stop_reason), tool_runs=len(runs))


report({"agent": lambda: run(True), "agent no stream": lambda: run(False)})
