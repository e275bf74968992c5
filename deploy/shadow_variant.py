"""A new head beside the production one: the shadow variant, its removal, and its promotion.

SageMaker copies a sample of the live requests to a shadow variant and discards its answers,
so the new head is measured on the endpoint's own traffic without a client noticing. Each
change here is a new endpoint config (NAME-<timestamp>, so `delete` finds it) built from the
live one, and an UpdateEndpoint. The shadow's model is the production model with the new
head in its eagle channel (and K, when given), named in its environment as the Shadow
variant with its own head version, which the container's metrics carry as dimensions.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from deploy import names, requests
from deploy.calls import Call, operation_model
from deploy.clients import Connection
from deploy.failures import DeployFailed, UsageError
from deploy.s3 import S3Prefix
from serving import paths
from serving.variables import HEAD_VERSION_VAR, SPECULATIVE_CONFIG_VAR, VARIANT_NAME_VAR

SAGEMAKER = requests.SAGEMAKER
SHADOW_VARIANT_NAME = "Shadow"


@dataclass(frozen=True)
class Live:
    """The endpoint as it is: its config, and the model of each of its variants."""

    endpoint_name: str
    config: dict[str, Any]
    models: dict[str, dict[str, Any]]  # model name -> DescribeModel's answer

    @property
    def production(self) -> dict[str, Any]:
        return self.config["ProductionVariants"][0]

    @property
    def shadow(self) -> dict[str, Any] | None:
        shadows = self.config.get("ShadowProductionVariants") or []
        return shadows[0] if shadows else None

    def model_of(self, variant: dict[str, Any]) -> dict[str, Any]:
        return self.models[variant["ModelName"]]


def read_live(connection: Connection, endpoint_name: str, in_service: bool = True) -> Live:
    """Describe the endpoint, its config and its variants' models (read-only calls); with
    `in_service`, DeployFailed unless it is InService (a change needs that)."""
    sagemaker = connection.client(SAGEMAKER)
    endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    if in_service and endpoint["EndpointStatus"] != "InService":
        raise DeployFailed(
            f"endpoint {endpoint_name} is {endpoint['EndpointStatus']}; a variant can be "
            "added, removed or promoted only while it is InService. Wait, then run again "
            "(`python -m deploy status --name ...` shows it)."
        )
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variants = [*config["ProductionVariants"], *(config.get("ShadowProductionVariants") or [])]
    if any("ModelName" not in variant for variant in variants):
        raise UsageError(
            f"endpoint {endpoint_name} hosts its model as an inference component; SageMaker's "
            "shadow variants need a variant with its own model. Roll a new head onto a "
            "component with `deploy` (a rolling update guarded by alarms) instead."
        )
    models = {
        variant["ModelName"]: sagemaker.describe_model(ModelName=variant["ModelName"])
        for variant in variants
    }
    return Live(endpoint_name, config, models)


def accepted_by(operation: str, described: dict[str, Any]) -> dict[str, Any]:
    """The members of a Describe answer that the Create request takes (the rest are its
    ARN, times and status)."""
    members = operation_model(SAGEMAKER, operation).input_shape.members
    return {key: value for key, value in described.items() if key in members}


def model_request(
    described: dict[str, Any],
    model_name: str,
    variant_name: str,
    head_version: str,
    head: S3Prefix | None = None,
    num_speculative_tokens: int | None = None,
) -> Call:
    """CreateModel for a copy of `described` serving as `variant_name`, with the new head's
    channel and K when given."""
    params = copy.deepcopy(accepted_by("CreateModel", described))
    params["ModelName"] = model_name
    container = params["PrimaryContainer"]
    environment = container.setdefault("Environment", {})
    environment[VARIANT_NAME_VAR] = variant_name
    environment[HEAD_VERSION_VAR] = head_version
    if head is not None:
        channels = container.get("AdditionalModelDataSources", [])
        eagle = [source for source in channels if source["ChannelName"] == paths.DRAFTER_CHANNEL]
        if not eagle:
            raise UsageError(
                f"model {described['ModelName']} has no {paths.DRAFTER_CHANNEL!r} channel in "
                "AdditionalModelDataSources; was it made by `deploy`? Deploy the endpoint with "
                "it first."
            )
        eagle[0]["S3DataSource"] = requests.s3_data_source(head)
    if num_speculative_tokens is not None:
        spec = json.loads(environment.get(SPECULATIVE_CONFIG_VAR, "{}"))
        spec["num_speculative_tokens"] = num_speculative_tokens
        environment[SPECULATIVE_CONFIG_VAR] = json.dumps(spec)
    return Call(SAGEMAKER, "CreateModel", params)


def config_request(
    live: Live, config_name: str, production: dict[str, Any], shadow: dict[str, Any] | None
) -> Call:
    """CreateEndpointConfig: the live config's settings with these variants."""
    params = copy.deepcopy(accepted_by("CreateEndpointConfig", live.config))
    params["EndpointConfigName"] = config_name
    params["ProductionVariants"] = [production]
    params.pop("ShadowProductionVariants", None)
    if shadow is not None:
        params["ShadowProductionVariants"] = [shadow]
    return Call(SAGEMAKER, "CreateEndpointConfig", params)


def update_request(endpoint_name: str, config_name: str) -> Call:
    return Call(
        SAGEMAKER,
        "UpdateEndpoint",
        {"EndpointName": endpoint_name, "EndpointConfigName": config_name},
    )


def shadow_variant(production: dict[str, Any], model_name: str, sample: int) -> dict[str, Any]:
    """The production variant's instances for the shadow's model; the share of requests
    copied to it is its weight over production's."""
    variant = copy.deepcopy(production)
    variant.pop("CurrentWeight", None)
    variant["VariantName"] = SHADOW_VARIANT_NAME
    variant["ModelName"] = model_name
    variant["InitialVariantWeight"] = round(
        production.get("InitialVariantWeight", 1.0) * sample / 100, 4
    )
    return variant


def add(
    live: Live, version: str, head: S3Prefix, num_speculative_tokens: int | None, sample: int
) -> list[Call]:
    if live.shadow is not None:
        raise UsageError(
            f"endpoint {live.endpoint_name} already has a shadow variant (model "
            f"{live.shadow['ModelName']}); `promote` it or `shadow --remove` it first."
        )
    name = names.versioned_name(live.endpoint_name, version)
    model = model_request(
        live.model_of(live.production),
        name,
        SHADOW_VARIANT_NAME,
        version,
        head,
        num_speculative_tokens,
    )
    variant = shadow_variant(live.production, name, sample)
    return [
        model,
        config_request(live, name, live.production, variant),
        update_request(live.endpoint_name, name),
    ]


def remove(live: Live, version: str) -> list[Call]:
    if live.shadow is None:
        raise UsageError(f"endpoint {live.endpoint_name} has no shadow variant to remove.")
    name = names.versioned_name(live.endpoint_name, version)
    return [
        config_request(live, name, live.production, None),
        update_request(live.endpoint_name, name),
    ]


def promote(live: Live, version: str) -> list[Call]:
    """Production's instances, the shadow's model (as the production variant, with the same
    head version), and no shadow."""
    if live.shadow is None:
        raise UsageError(
            f"endpoint {live.endpoint_name} has no shadow variant to promote; add one with "
            "`shadow --head-uri ...`, or roll a head out with `deploy`."
        )
    shadow_model = live.model_of(live.shadow)
    environment = shadow_model["PrimaryContainer"].get("Environment", {})
    head_version = environment.get(HEAD_VERSION_VAR, version)
    name = names.versioned_name(live.endpoint_name, version)
    model = model_request(shadow_model, name, names.VARIANT_NAME, head_version)
    production = {**copy.deepcopy(live.production), "ModelName": name}
    production.pop("CurrentWeight", None)
    return [
        model,
        config_request(live, name, production, None),
        update_request(live.endpoint_name, name),
    ]
