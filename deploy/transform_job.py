"""The transform subcommand: a Batch Transform job over JSON Lines with the target and its
P-EAGLE head, waited on, and what came out of it.

Batch Transform refuses a model whose container uses `ModelDataSource` (sagemaker-python-sdk
issues 4777, 5160: "SageMaker Batch currently doesn't support Model entity with container
definitions which use ModelDataSource attribute"), and nothing documents extra channels
there either. So the model is one `ModelDataUrl` tarball holding the target with its head
under `eagle/` (`upload --pack`), which the container finds at /opt/ml/model/eagle.

The job: `SplitType=Line`, `BatchStrategy=MultiRecord`, `AssembleWith=Line`, JSON Lines in
and out, so the container answers each mini-batch's records together and one line each.
"""

from __future__ import annotations

import argparse
import functools
import json
from dataclasses import dataclass
from typing import Any, TextIO

from deploy import calls, inputs, names
from deploy.calls import Call
from deploy.failures import UsageError
from deploy.requests import SAGEMAKER, model_call, speculative_config
from deploy.s3 import S3Prefix
from deploy.waiting import Clock, completed, poll_job
from serving import paths
from serving.variables import SPECULATIVE_CONFIG_VAR

# Where the head is inside the model's tarball, as the container sees it.
HEAD_IN_MODEL = str(paths.model_dir(paths.DEFAULT_OPT_ML_ROOT) / paths.MODEL_HEAD_SUBDIR)
JSON_LINES = "application/jsonlines"


@dataclass(frozen=True)
class TransformPlan:
    job_name: str
    model_name: str
    image_uri: str
    role_arn: str
    model_url: str
    input: S3Prefix
    output: S3Prefix
    instance_type: str
    instance_count: int
    num_speculative_tokens: int
    max_payload_mb: int
    max_concurrent_transforms: int | None
    invocations_timeout_seconds: int
    max_retries: int
    join_input: bool


def model_url_problem(url: str) -> str | None:
    if url.startswith("s3://") and url.endswith(".tar.gz") and len(url) > len("s3://x/.tar.gz"):
        return None
    return (
        f"--model-url {url!r} is not an S3 tarball; Batch Transform takes the model as one "
        "s3://bucket/path/model.tar.gz with the head under eagle/ (make it with "
        "`python -m deploy upload --pack`)."
    )


def plan_of(args: argparse.Namespace, version: str) -> TransformPlan:
    problems = inputs.job_problems(args, "TransformInstanceType", "a transform type")
    if problem := model_url_problem(args.model_url):
        problems.append(problem)
    source = inputs.checked_prefix("--input-uri", args.input_uri, problems)
    output = inputs.checked_prefix("--output-uri", args.output_uri, problems)
    if args.k < 1:
        problems.append(f"--k {args.k} is below 1.")
    if not 1 <= args.max_payload_mb <= 100:
        problems.append(
            f"--max-payload-mb {args.max_payload_mb} is outside Batch Transform's 1 to 100."
        )
    if problems:
        raise UsageError(problems)
    assert source is not None and output is not None
    name = names.versioned_name(args.name, version)
    return TransformPlan(
        job_name=name,
        model_name=name,
        image_uri=args.image,
        role_arn=args.role,
        model_url=args.model_url,
        input=source,
        output=output,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        num_speculative_tokens=args.k,
        max_payload_mb=args.max_payload_mb,
        max_concurrent_transforms=args.max_concurrent_transforms,
        invocations_timeout_seconds=args.invocations_timeout,
        max_retries=args.max_retries,
        join_input=args.join_source == "input",
    )


def create_model(plan: TransformPlan) -> Call:
    config = {**speculative_config(plan.num_speculative_tokens), "model": HEAD_IN_MODEL}
    return model_call(
        plan.model_name,
        plan.role_arn,
        Image=plan.image_uri,
        ModelDataUrl=plan.model_url,
        Environment={SPECULATIVE_CONFIG_VAR: json.dumps(config)},
    )


def create_transform_job(plan: TransformPlan) -> Call:
    params: dict[str, Any] = {
        "TransformJobName": plan.job_name,
        "ModelName": plan.model_name,
        "BatchStrategy": "MultiRecord",
        "MaxPayloadInMB": plan.max_payload_mb,
        "ModelClientConfig": {
            "InvocationsTimeoutInSeconds": plan.invocations_timeout_seconds,
            "InvocationsMaxRetries": plan.max_retries,
        },
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": plan.input.uri}},
            "ContentType": JSON_LINES,
            "SplitType": "Line",
            "CompressionType": "None",
        },
        "TransformOutput": {
            "S3OutputPath": plan.output.uri,
            "Accept": JSON_LINES,
            "AssembleWith": "Line",
        },
        "TransformResources": {
            "InstanceType": plan.instance_type,
            "InstanceCount": plan.instance_count,
        },
    }
    if plan.max_concurrent_transforms is not None:
        params["MaxConcurrentTransforms"] = plan.max_concurrent_transforms
    if plan.join_input:
        params["DataProcessing"] = {"JoinSource": "Input"}
    return Call(SAGEMAKER, "CreateTransformJob", params)


def wait_for_job(sagemaker: Any, plan: TransformPlan, out: TextIO, clock: Clock) -> None:
    """Poll DescribeTransformJob, printing each change of status; DeployFailed with
    SageMaker's reason when the job does not complete."""
    describe = functools.partial(sagemaker.describe_transform_job, TransformJobName=plan.job_name)
    description = poll_job(
        describe,
        "TransformJobStatus",
        lambda described: f"{plan.job_name}: {described['TransformJobStatus']}",
        out,
        clock,
    )
    completed(
        description,
        "TransformJobStatus",
        f"transform job {plan.job_name}",
        f"/aws/sagemaker/TransformJobs, stream {plan.job_name}/*",
    )


def count_outputs(s3: Any, output: S3Prefix) -> tuple[int, int, int]:
    """(output files, answer lines, error lines) under the job's output prefix."""
    files = lines = errors = 0
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=output.bucket, Prefix=output.prefix):
        for item in page.get("Contents", []):
            if not item["Key"].endswith(".out"):
                continue
            files += 1
            body = s3.get_object(Bucket=output.bucket, Key=item["Key"])["Body"]
            for line in body.iter_lines():
                if not line.strip():
                    continue
                lines += 1
                answer = json.loads(line)
                if isinstance(answer, dict):
                    answer = answer.get("SageMakerOutput", answer)
                errors += isinstance(answer, dict) and "error" in answer
    return files, lines, errors


def run(
    args: argparse.Namespace, connection_for: Any, out: TextIO, err: TextIO, clock: Clock
) -> int:
    plan = plan_of(args, names.version_now())
    requests = [create_model(plan), create_transform_job(plan)]
    problems = calls.problems(requests)
    if problems:
        raise UsageError(problems)
    if args.dry_run:
        calls.print_calls(requests, out)
        err.write(
            f"dry run: nothing sent. The job would write one answer line per input line to "
            f"{plan.output.uri} (each input file's answers in FILE.out).\n"
        )
        return 0
    connection = connection_for()
    for request in requests:
        out.write(f"{request.operation} {plan.job_name}\n")
        calls.send(connection.client, request)
    clock.poll_seconds = args.poll_seconds
    wait_for_job(connection.client(SAGEMAKER), plan, out, clock)
    files, lines, errors = count_outputs(connection.client("s3"), plan.output)
    out.write(
        f"output: {plan.output.uri} ({files} files, {lines} answer lines, {errors} records "
        "answered with an error line; find them with: grep '\"error\"')\n"
    )
    return 0
