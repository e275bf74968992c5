"""One control-plane request: built as data, checked strictly, then printed or sent.

Keeping requests as data until the last moment is what lets --dry-run print exactly what
would be sent, and lets every request be checked before the first one goes out.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import botocore.session
from botocore import xform_name
from botocore.model import OperationModel

from deploy.shapes import violations


@dataclass(frozen=True)
class Call:
    service: str  # the boto3 client name: "sagemaker", "application-autoscaling"
    operation: str  # the API's name: "CreateModel"
    params: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"service": self.service, "operation": self.operation, "parameters": self.params}


@functools.cache
def operation_model(service: str, operation: str) -> OperationModel:
    model = botocore.session.get_session().get_service_model(service)
    return model.operation_model(operation)


def problems(calls: Iterable[Call]) -> list[str]:
    """Every value in `calls` that the service would reject, as sentences."""
    found: list[str] = []
    for call in calls:
        found += violations(operation_model(call.service, call.operation), call.params)
    return found


def print_calls(calls: Iterable[Call], out: TextIO) -> None:
    """Each request as an indented JSON object, one after another (what `jq` reads)."""
    for call in calls:
        out.write(json.dumps(call.as_dict(), indent=2) + "\n")


def send(client_for: Callable[[str], Any], call: Call) -> dict[str, Any]:
    """Send `call` with the client `client_for` gives for its service."""
    method = getattr(client_for(call.service), xform_name(call.operation))
    return method(**call.params)
