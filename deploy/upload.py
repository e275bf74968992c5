"""The upload subcommand: the target and the head to S3 as uncompressed prefixes.

SageMaker mounts an S3Prefix data source file for file, so the directories go up as they
are, no tar.gz: BASE/model/ for the target, BASE/eagle/ for the head. Large files go in
parallel parts (boto3's transfer manager). A re-run sends only what changed: each object
carries its file's sha256 in its user metadata, and a file whose size and sha256 match the
object already there is skipped. S3's ETag cannot serve for that, since a multipart
upload's ETag depends on the part size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from tqdm import tqdm

from deploy.model_dirs import model_files
from deploy.s3 import S3Prefix, list_objects

MiB = 2**20
CHECKSUM_METADATA = "sha256"
TARGET_CHANNEL = "model"
HEAD_CHANNEL = "eagle"
DEFAULT_TRANSFER = TransferConfig(
    multipart_threshold=64 * MiB, multipart_chunksize=64 * MiB, max_concurrency=8
)


@dataclass
class Outcome:
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Objects under the prefix with no local file: SageMaker would mount them too.
    extra: list[str] = field(default_factory=list)


def progress_bar(total: int, description: str, err: TextIO) -> tqdm:
    return tqdm(
        total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=description, file=err
    )


def sha256_of(path: Path, progress: tqdm) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(8 * MiB):
            digest.update(block)
            progress.update(len(block))
    return digest.hexdigest()


def is_current(s3: Any, bucket: str, key: str, size: int, digest: str) -> bool:
    """The object exists with this file's size and sha256."""
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    stored = head.get("Metadata", {}).get(CHECKSUM_METADATA)
    return head["ContentLength"] == size and stored == digest


def upload_directory(
    s3: Any,
    directory: Path,
    prefix: S3Prefix,
    err: TextIO,
    transfer: TransferConfig = DEFAULT_TRANSFER,
) -> Outcome:
    outcome = Outcome()
    files = model_files(directory)
    total = sum(path.stat().st_size for path, _ in files)
    pending: list[tuple[Path, str, str]] = []
    with progress_bar(total, f"checking {directory}", err) as bar:
        for path, relative in files:
            key = prefix.prefix + relative
            digest = sha256_of(path, bar)
            if is_current(s3, prefix.bucket, key, path.stat().st_size, digest):
                outcome.skipped.append(key)
            else:
                pending.append((path, key, digest))
    to_send = sum(path.stat().st_size for path, _, _ in pending)
    with progress_bar(to_send, f"uploading {directory}", err) as bar:
        for path, key, digest in pending:
            s3.upload_file(
                str(path),
                prefix.bucket,
                key,
                ExtraArgs={"Metadata": {CHECKSUM_METADATA: digest}},
                Config=transfer,
                Callback=bar.update,
            )
            outcome.uploaded.append(key)
    local = {prefix.prefix + relative for _, relative in files}
    outcome.extra = sorted(
        item["Key"] for item in list_objects(s3, prefix) if item["Key"] not in local
    )
    return outcome


def extra_warning(prefix: S3Prefix, directory: Path, extra: list[str]) -> str:
    shown = ", ".join(extra[:3]) + (", ..." if len(extra) > 3 else "")
    return (
        f"warning: {prefix.uri} holds {len(extra)} object(s) that {directory} does not "
        f"({shown}); SageMaker mounts them too. Remove them (aws s3 rm) or upload to a fresh "
        "prefix."
    )


def upload_pair(
    s3: Any,
    target_dir: Path,
    head_dir: Path,
    base: S3Prefix,
    out: TextIO,
    err: TextIO,
    transfer: TransferConfig = DEFAULT_TRANSFER,
) -> dict[str, Outcome]:
    """Both directories under `base`; prints each one's counts and the URIs for deploy."""
    outcomes = {}
    for directory, channel in ((target_dir, TARGET_CHANNEL), (head_dir, HEAD_CHANNEL)):
        prefix = base.child(channel)
        outcome = upload_directory(s3, directory, prefix, err, transfer)
        outcomes[channel] = outcome
        out.write(
            f"{prefix.uri}: {len(outcome.uploaded)} uploaded, {len(outcome.skipped)} unchanged\n"
        )
        if outcome.extra:
            err.write(extra_warning(prefix, directory, outcome.extra) + "\n")
    target_uri, head_uri = base.child(TARGET_CHANNEL).uri, base.child(HEAD_CHANNEL).uri
    out.write(f"deploy with:\n  --target-uri {target_uri} --head-uri {head_uri}\n")
    return outcomes
