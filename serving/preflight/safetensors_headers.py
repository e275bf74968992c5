"""The tensors a head's safetensors files hold: names, dtypes and shapes, from the headers.

Only the header at the front of each file is read, never tensor data, so checking a head
costs milliseconds whatever its size.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.preflight.files import UnreadableFile, read_json_object

SAFETENSORS_INDEX = "model.safetensors.index.json"

# Bytes per element for the safetensors dtypes, to tell a corrupt entry from a good one.
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# A real header is kilobytes to a few megabytes; anything near this is not a header.
MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


def read_safetensors_header(path: Path) -> dict[str, Tensor]:
    """Tensor names, dtypes and shapes from a safetensors file's header; no tensor data.

    The format: 8 bytes little-endian header length N, N bytes of JSON, then the data.
    """
    size = path.stat().st_size
    with path.open("rb") as stream:
        prefix = stream.read(8)
        if len(prefix) < 8:
            raise UnreadableFile(
                f"{path} is {size} bytes, too short to be safetensors: the file is truncated. "
                "Upload it again."
            )
        (header_bytes,) = struct.unpack("<Q", prefix)
        if header_bytes > min(size - 8, MAX_HEADER_BYTES):
            raise UnreadableFile(
                f"{path} declares a {header_bytes}-byte header but holds {size} bytes: the file "
                "is truncated or not safetensors. Upload it again."
            )
        raw = stream.read(header_bytes)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UnreadableFile(
            f"{path} has a corrupt safetensors header (not JSON): upload the file again."
        ) from None
    if not isinstance(header, dict):
        raise UnreadableFile(f"{path} has a corrupt safetensors header: upload the file again.")
    data_bytes = size - 8 - header_bytes
    tensors: dict[str, Tensor] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = header_entry(path, name, entry, data_bytes)
    return tensors


def header_entry(path: Path, name: str, entry: Any, data_bytes: int) -> Tensor:
    corrupt = UnreadableFile(
        f"{path} has a corrupt safetensors header entry for {name!r}: upload the file again."
    )
    if not isinstance(entry, dict):
        raise corrupt
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not (
        isinstance(dtype, str)
        and isinstance(shape, list)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(n, int) for n in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        raise corrupt
    if offsets[1] > data_bytes:
        raise UnreadableFile(
            f"{path} is truncated: tensor {name!r} ends at byte {offsets[1]} of the data but "
            f"the file holds {data_bytes}. Upload it again."
        )
    tensor = Tensor(name, dtype, tuple(shape), path)
    if dtype in DTYPE_BYTES and offsets[1] - offsets[0] != tensor.numel * DTYPE_BYTES[dtype]:
        raise corrupt
    return tensor


def read_tensors(drafter_dir: Path, problems: list[str]) -> dict[str, Tensor] | None:
    """Every tensor in the head's safetensors files, or None when they cannot all be read."""
    files = sorted(drafter_dir.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in drafter_dir.glob("*") if p.suffix in (".bin", ".pt"))
        found = f" (found {', '.join(others)}: convert them to safetensors)" if others else ""
        problems.append(
            f"drafter {drafter_dir} has no *.safetensors weights{found}; upload the head's "
            "model.safetensors next to its config.json."
        )
        return None
    index_path = drafter_dir / SAFETENSORS_INDEX
    readable = True
    if index_path.is_file():
        try:
            index = read_json_object(index_path, "drafter index")
        except UnreadableFile as error:
            problems.append(str(error))
            readable = False
        else:
            weight_map = index.get("weight_map")
            shards = set(weight_map.values()) if isinstance(weight_map, dict) else set()
            for shard in sorted(s for s in shards if not (drafter_dir / str(s)).is_file()):
                problems.append(
                    f"drafter {index_path} lists shard {shard} but {drafter_dir} has no such "
                    "file; upload every shard."
                )
                readable = False
    tensors: dict[str, Tensor] = {}
    for path in files:
        try:
            tensors |= read_safetensors_header(path)
        except (UnreadableFile, OSError) as error:
            problems.append(f"drafter {error}")
            readable = False
    return tensors if readable else None


def find_tensor(tensors: dict[str, Tensor], suffix: str) -> Tensor | None:
    """The tensor named `suffix` or `<prefix>.<suffix>` (checkpoints add `model.` and such)."""
    for name in sorted(tensors, key=len):
        if name == suffix or name.endswith("." + suffix):
            return tensors[name]
    return None


def find_tensor_containing(tensors: dict[str, Tensor], part: str) -> Tensor | None:
    # vLLM matches these by substring (`"mask_hidden" in name`, `"d2t" in name`).
    for name in sorted(tensors, key=len):
        if part in name:
            return tensors[name]
    return None
