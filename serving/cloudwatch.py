"""The names the container's CloudWatch metrics are written under: namespace, metric names and
dimensions. No imports: deploy builds its alarms and its comparison queries from these, so an
alarm watches exactly what the container writes.
"""

NAMESPACE = "SageMaker/vLLM-PEagle"

ENDPOINT_DIMENSION = "EndpointName"
VARIANT_DIMENSION = "VariantName"
# Which head a fleet serves: during a blue/green update both fleets share the variant's name,
# so the new fleet's alarms tell its figures apart by this one.
HEAD_VERSION_DIMENSION = "HeadVersion"

REQUESTS = "Requests"
ERRORS = "Errors"
THROTTLED = "Throttled"
ENGINE_RESTARTS = "EngineRestarts"
IN_FLIGHT = "InFlight"
OUTPUT_TOKENS_PER_SECOND = "OutputTokensPerSecond"
ACCEPTANCE_RATE = "AcceptanceRate"
MEAN_ACCEPTANCE_LENGTH = "MeanAcceptanceLength"


def position_metric(position: int) -> str:
    """Acceptance at draft position `position`, counted from 1 as a person does."""
    return f"AcceptanceRatePosition{position}"


def drafts_with_k_metric(k: int) -> str:
    """Drafts of exactly `k` tokens: the K in use, which a batch-size schedule changes."""
    return f"DraftsWithK{k}"


def dimension_sets(dimensions: dict[str, str]) -> list[list[str]]:
    """The variant's figures (every head it served), and with a head version, that head's."""
    variant = sorted(name for name in dimensions if name != HEAD_VERSION_DIMENSION)
    if HEAD_VERSION_DIMENSION in dimensions:
        return [variant, sorted(dimensions)]
    return [variant]
