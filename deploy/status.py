"""The status subcommand: an endpoint's state in a few lines a person reads at a glance."""

from __future__ import annotations

from typing import Any, TextIO

from deploy import names


def endpoint_lines(endpoint: dict[str, Any], instance_types: dict[str, str]) -> list[str]:
    lines = [
        f"endpoint {endpoint['EndpointName']}: {endpoint['EndpointStatus']} "
        f"(config {endpoint.get('EndpointConfigName', '-')})"
    ]
    if endpoint.get("FailureReason"):
        lines.append(f"  last failure: {endpoint['FailureReason']}")
    for variant in endpoint.get("ProductionVariants", []):
        name = variant["VariantName"]
        lines.append(
            f"  variant {name}: {instance_types.get(name, '?')} x "
            f"{variant.get('CurrentInstanceCount', '?')} "
            f"(desired {variant.get('DesiredInstanceCount', '?')})"
        )
    return lines


def component_lines(component: dict[str, Any]) -> list[str]:
    runtime = component.get("RuntimeConfig", {})
    spec = component.get("Specification", {})
    lines = [
        f"  component {component['InferenceComponentName']}: "
        f"{component['InferenceComponentStatus']}, copies {runtime.get('CurrentCopyCount', '?')} "
        f"(desired {runtime.get('DesiredCopyCount', '?')}), model {spec.get('ModelName', '-')}"
    ]
    if component.get("FailureReason"):
        lines.append(f"    last failure: {component['FailureReason']}")
    return lines


def report(sagemaker: Any, endpoint_name: str, region: str, out: TextIO) -> str:
    """Print the endpoint's state; its status."""
    endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    instance_types = {
        variant["VariantName"]: variant.get("InstanceType", "?")
        for variant in config.get("ProductionVariants", [])
    }
    lines = endpoint_lines(endpoint, instance_types)
    paginator = sagemaker.get_paginator("list_inference_components")
    for page in paginator.paginate(EndpointNameEquals=endpoint_name):
        for listed in page.get("InferenceComponents", []):
            component = sagemaker.describe_inference_component(
                InferenceComponentName=listed["InferenceComponentName"]
            )
            lines += component_lines(component)
    lines.append(f"  logs: CloudWatch log group {names.log_group(endpoint_name)}")
    lines.append(f"  console: {names.console_url(region, endpoint_name)}")
    out.write("\n".join(lines) + "\n")
    return endpoint["EndpointStatus"]
