"""SageMaker Runtime's error answers, shaped so boto3 raises its real exception classes.

botocore reads the error code from `x-amzn-ErrorType` and the modelled fields from the JSON
body, so `except runtime.exceptions.ModelError as error` sees `OriginalStatusCode`,
`OriginalMessage` and `LogStreamArn` as a real endpoint gives them.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

# The container a single-container endpoint names in its messages.
CONTAINER_NAME = "primary"
MODEL_ERROR_STATUS = 424
# A local stand-in for the account id SageMaker puts in its messages and ARNs.
LOCAL_ACCOUNT = "000000000000"
LOCAL_REGION = "local"
TIMED_OUT = (
    f"Your invocation timed out while waiting for a response from container {CONTAINER_NAME}. "
    "Review the latency metrics for each container in Amazon CloudWatch, resolve the issue, "
    "and try again."
)


def log_stream_arn(endpoint_name: str) -> str:
    return (
        f"arn:aws:logs:{LOCAL_REGION}:{LOCAL_ACCOUNT}:log-group:"
        f"/aws/sagemaker/Endpoints/{endpoint_name}"
    )


def error_response(
    code: str, status: int, body: dict[str, object], request_id: str
) -> JSONResponse:
    return JSONResponse(
        body,
        status_code=status,
        headers={"x-amzn-ErrorType": code, "x-amzn-RequestId": request_id},
    )


def validation_error(message: str, request_id: str, code: str = "ValidationError") -> JSONResponse:
    """`code`: the HTTP/2 runtime's model names this error InputValidationError."""
    return error_response(code, 400, {"Message": message}, request_id)


def model_error(
    endpoint_name: str, status: int, original_message: str, request_id: str
) -> JSONResponse:
    """The container answered `status` >= 400, or not at all (status 0)."""
    if status == 0:
        message = original_message
    else:
        side = "client" if status < 500 else "server"
        message = (
            f"Received {side} error ({status}) from {CONTAINER_NAME} with message "
            f'"{original_message}". See the container\'s log (the log group '
            f"/aws/sagemaker/Endpoints/{endpoint_name} on SageMaker) for more information."
        )
    return error_response(
        "ModelError",
        MODEL_ERROR_STATUS,
        {
            "ErrorCode": "CLIENT_ERROR_FROM_MODEL"
            if 0 < status < 500
            else "SERVER_ERROR_FROM_MODEL",
            "Message": message,
            "OriginalStatusCode": status,
            "OriginalMessage": original_message,
            "LogStreamArn": log_stream_arn(endpoint_name),
        },
        request_id,
    )
