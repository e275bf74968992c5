"""A local SageMaker Runtime: boto3's `sagemaker-runtime` client, unchanged, against a container.

It speaks SageMaker Runtime's REST protocol (InvokeEndpoint and
InvokeEndpointWithResponseStream) on one side and the container's `/ping` and `/invocations`
on the other, so the client code that will call a real endpoint runs here first.
"""
