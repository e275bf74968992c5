"""The SageMaker Python SDK v2: `Predictor` without a serializer (it sends the bytes as
application/octet-stream) and with the JSON one, and `predict_stream`."""

from __future__ import annotations

import json
import os

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

from common import (  # noqa: E402
    ENDPOINT,
    MAX_TOKENS,
    MESSAGES,
    chat_stream_text,
    report,
    runtime_client,
)
from sagemaker.deserializers import JSONDeserializer  # noqa: E402
from sagemaker.predictor import Predictor  # noqa: E402
from sagemaker.serializers import JSONSerializer  # noqa: E402
from sagemaker.session import Session  # noqa: E402

PAYLOAD = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}
session = Session(sagemaker_runtime_client=runtime_client())


def plain() -> str:
    predictor = Predictor(ENDPOINT, sagemaker_session=session)
    return json.loads(predictor.predict(json.dumps(PAYLOAD).encode()))["choices"][0]["message"][
        "content"
    ]


def with_json() -> str:
    predictor = Predictor(
        ENDPOINT,
        sagemaker_session=session,
        serializer=JSONSerializer(),
        deserializer=JSONDeserializer(),
    )
    return predictor.predict(PAYLOAD)["choices"][0]["message"]["content"]


def streamed() -> str:
    predictor = Predictor(ENDPOINT, sagemaker_session=session, serializer=JSONSerializer())
    return chat_stream_text(b"".join(predictor.predict_stream({**PAYLOAD, "stream": True})))


report({"Predictor bytes": plain, "Predictor JSON": with_json, "predict_stream": streamed})
