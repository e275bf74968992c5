"""instructor, unchanged, on the local runtime's OpenAI-compatible path with a bearer token
the SageMaker SDK v3 made (SAGEMAKER_BEARER_TOKEN): a validated object by a tool call (its
default mode) and by a JSON schema."""

from __future__ import annotations

import os
from typing import Literal

import instructor
import openai
from common import ENDPOINT, RUNTIME_URL, report
from pydantic import BaseModel

BASE_URL = f"{RUNTIME_URL}/endpoints/{ENDPOINT}/openai/v1"
api = openai.OpenAI(base_url=BASE_URL, api_key=os.environ["SAGEMAKER_BEARER_TOKEN"], max_retries=0)


class City(BaseModel):
    city: Literal["Paris", "Tokyo", "Lima"]
    sunny: bool


def extract(mode: instructor.Mode) -> str:
    client = instructor.from_openai(api, mode=mode)
    city = client.chat.completions.create(
        model=ENDPOINT, response_model=City, max_retries=0, max_tokens=128, temperature=0,
        messages=[{"role": "user", "content": "Which city is sunny?"}],
    )  # fmt: skip
    return city.model_dump_json()


report(
    {
        "instructor tools": lambda: extract(instructor.Mode.TOOLS),
        "instructor json schema": lambda: extract(instructor.Mode.JSON_SCHEMA),
    }
)
