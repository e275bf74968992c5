"""`train-head`: a P-EAGLE head for your own target, trained as a SageMaker training job.

The job runs the training image (the Dockerfile's `training` target) with `train`, the channels
`target` (the HF checkpoint), `train` (capture export's JSONL), and optionally `eagle` (a head
to start from) and `replay` (conversations of the traffic that head drafts, to keep). Its
output is uncompressed, so OUTPUT/JOB/output/model/ is the head as vLLM loads it: the
--head-uri that `deploy` takes. With --spot, checkpoints go to OUTPUT/JOB/checkpoints/ and an
interrupted job resumes from them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, TextIO

from deploy import names
from deploy.calls import Call
from deploy.s3 import S3Prefix
from deploy.waiting import Clock, completed, poll_job

SAGEMAKER = "sagemaker"
DEFAULT_TRAINING_INSTANCE = "ml.g6e.12xlarge"
DEFAULT_MAX_HOURS = 24.0
CHECKPOINTS = "/opt/ml/checkpoints"
# What the trainer writes to its log (training/job.py), read back as the job's metrics.
METRIC_DEFINITIONS = [
    {"Name": "validation:loss", "Regex": r"peagle_validation_loss_epoch=([0-9.eE+-]+)"},
    {
        "Name": "validation:full_accuracy",
        "Regex": r"peagle_validation_full_acc_epoch=([0-9.eE+-]+)",
    },
    {
        "Name": "held_out:acceptance_length",
        "Regex": r"peagle_held_out_acceptance_length=([0-9.eE+-]+)",
    },
    {
        "Name": "replay:acceptance_length",
        "Regex": r"peagle_replay_acceptance_length=([0-9.eE+-]+)",
    },
]


@dataclass(frozen=True)
class TrainingPlan:
    job_name: str
    image_uri: str
    role_arn: str
    target: S3Prefix
    train: S3Prefix
    output: S3Prefix
    instance_type: str
    volume_gb: int
    head: S3Prefix | None = None
    replay: S3Prefix | None = None
    instance_count: int = 1
    spot: bool = False
    max_seconds: int = int(DEFAULT_MAX_HOURS * 3600)
    hyperparameters: dict[str, str] = field(default_factory=dict)

    @property
    def job_output(self) -> S3Prefix:
        return self.output.child(self.job_name)

    @property
    def head_uri(self) -> str:
        """Where the trained head lands: deploy's --head-uri."""
        return self.job_output.child("output").child("model").uri


def channel(name: str, prefix: S3Prefix) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": prefix.uri,
                "S3DataDistributionType": "FullyReplicated",
            }
        },
        "InputMode": "File",
    }


def create_training_job(plan: TrainingPlan) -> Call:
    channels = [channel("target", plan.target), channel("train", plan.train)]
    if plan.head is not None:
        channels.append(channel("eagle", plan.head))
    if plan.replay is not None:
        channels.append(channel("replay", plan.replay))
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": plan.max_seconds}
    params: dict[str, Any] = {
        "TrainingJobName": plan.job_name,
        "AlgorithmSpecification": {
            "TrainingImage": plan.image_uri,
            "TrainingInputMode": "File",
            "MetricDefinitions": METRIC_DEFINITIONS,
        },
        "RoleArn": plan.role_arn,
        "InputDataConfig": channels,
        # Uncompressed: output/model/ is the head's folder itself, no model.tar.gz to unpack.
        "OutputDataConfig": {"S3OutputPath": plan.output.uri, "CompressionType": "NONE"},
        "ResourceConfig": {
            "InstanceType": plan.instance_type,
            "InstanceCount": plan.instance_count,
            "VolumeSizeInGB": plan.volume_gb,
        },
        "HyperParameters": plan.hyperparameters,
        "StoppingCondition": stopping,
    }
    if plan.spot:
        # Spot capacity may take a while and may be taken back: wait up to twice the run
        # time, and keep checkpoints in S3 so a restarted job resumes.
        params["EnableManagedSpotTraining"] = True
        stopping["MaxWaitTimeInSeconds"] = 2 * plan.max_seconds
        params["CheckpointConfig"] = {
            "S3Uri": plan.job_output.child("checkpoints").uri,
            "LocalPath": CHECKPOINTS,
        }
    return Call(SAGEMAKER, "CreateTrainingJob", params)


def job_name(base: str, version: str) -> str:
    return names.versioned_name(base, version)


def metrics_text(description: dict[str, Any]) -> str:
    final = description.get("FinalMetricDataList") or []
    return ", ".join(f"{metric['MetricName']} {metric['Value']:.4g}" for metric in final)


def wait_for_job(sagemaker: Any, plan: TrainingPlan, out: TextIO, clock: Clock) -> dict[str, Any]:
    """Poll DescribeTrainingJob, printing each change of status and the metrics as they come;
    DeployFailed with SageMaker's reason when the job does not complete."""
    describe = functools.partial(sagemaker.describe_training_job, TrainingJobName=plan.job_name)

    def line_of(description: dict[str, Any]) -> str:
        line = f"{plan.job_name}: {description['TrainingJobStatus']}"
        if secondary := description.get("SecondaryStatus"):
            line += f" ({secondary})"
        if metrics := metrics_text(description):
            line += f"; {metrics}"
        return line

    description = poll_job(describe, "TrainingJobStatus", line_of, out, clock)
    completed(
        description,
        "TrainingJobStatus",
        f"training job {plan.job_name}",
        f"/aws/sagemaker/TrainingJobs, stream {plan.job_name}/algo-1-*",
    )
    return description
