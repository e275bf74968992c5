"""`upload --pack`: the target and its head as one model.tar.gz, the head under `eagle/`.

Batch Transform takes a model only as one `ModelDataUrl` tarball (no `ModelDataSource`, no
documented extra channel), which SageMaker unpacks into /opt/ml/model; the container then
finds the head at /opt/ml/model/eagle. Weights are already compressed poorly by gzip, so the
tarball is written with the fastest level: it is the upload that takes the time.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any, TextIO

from deploy.model_dirs import model_files
from deploy.s3 import S3Prefix
from deploy.upload import DEFAULT_TRANSFER, progress_bar
from serving import paths

TARBALL_NAME = "model.tar.gz"


def pack(target_dir: Path, head_dir: Path, tarball: Path) -> list[str]:
    """Write the tarball: the target's files at its root, the head's under eagle/. Returns
    the member names."""
    members = []
    with tarfile.open(tarball, "w:gz", compresslevel=1) as archive:
        for path, relative in model_files(target_dir):
            if relative.split("/", 1)[0] == paths.MODEL_HEAD_SUBDIR:
                continue  # an old head inside the target would be overlaid by this one
            archive.add(path, arcname=relative, recursive=False)
            members.append(relative)
        for path, relative in model_files(head_dir):
            name = f"{paths.MODEL_HEAD_SUBDIR}/{relative}"
            archive.add(path, arcname=name, recursive=False)
            members.append(name)
    return members


def upload_tarball(s3: Any, tarball: Path, base: S3Prefix, out: TextIO, err: TextIO) -> str:
    key = base.prefix + TARBALL_NAME
    with progress_bar(tarball.stat().st_size, f"uploading {tarball.name}", err) as bar:
        s3.upload_file(str(tarball), base.bucket, key, Config=DEFAULT_TRANSFER, Callback=bar.update)
    url = f"s3://{base.bucket}/{key}"
    out.write(
        f"{url}: the target with its head under eagle/\ntransform with:\n  --model-url {url}\n"
    )
    return url
