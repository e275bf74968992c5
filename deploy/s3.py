"""S3 prefixes: the `s3://bucket/prefix/` form SageMaker mounts uncompressed, and listing one.

SageMaker copies every object under an S3Prefix data source into the container, keyed by
the rest of its key; a URI without the trailing slash would also take `prefix-old/...`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Bucket naming rules, shortened: 3-63 lowercase letters, digits, dots and hyphens.
BUCKET = r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]"


@dataclass(frozen=True)
class S3Prefix:
    bucket: str
    prefix: str  # ends in "/"; "" for the bucket's root

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def child(self, name: str) -> S3Prefix:
        return S3Prefix(self.bucket, f"{self.prefix}{name}/")


def parse_prefix(option: str, uri: str) -> S3Prefix:
    """`s3://bucket/some/prefix/` as an S3Prefix; ValueError with the sentence otherwise."""
    match = re.fullmatch(rf"s3://({BUCKET})/(.*)", uri)
    if match is None:
        raise ValueError(
            f"{option} {uri!r} is not an S3 prefix; write it as s3://bucket/some/prefix/ "
            "(a bucket name, then a folder ending in /)."
        )
    bucket, prefix = match.groups()
    if prefix and not prefix.endswith("/") or "//" in prefix or prefix.startswith("/"):
        raise ValueError(
            f"{option} {uri!r} is not an S3 prefix: SageMaker reads every key that starts with "
            f"it, so it must end in a single /; write s3://{bucket}/{prefix.strip('/')}/."
        )
    return S3Prefix(bucket, prefix)


def list_objects(s3: Any, prefix: S3Prefix) -> Iterator[dict[str, Any]]:
    """Every object under the prefix (Key, Size, ...), page by page."""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=prefix.bucket, Prefix=prefix.prefix)
    for page in pages:
        yield from page.get("Contents", [])


def prefix_bytes(s3: Any, prefix: S3Prefix) -> int:
    return sum(item["Size"] for item in list_objects(s3, prefix))
