"""Rewrite a GGUF's Q5_0 matrices as Q8_0 holding exactly the same values.

Q5_0 stores 32 weights as one fp16 scale `d` and 5-bit integers `q` in [-16, 15] (weight = d * q).
Q8_0 stores 32 weights as one fp16 scale and 8-bit integers. Writing `d / k` and `k * q` with k = 4
(or 2, or 1: the largest for which `d / k` is exact in fp16) gives `(d / k) * (k * q) == d * q` for
every weight, bit for bit, and `k * q` stays within [-64, 60]. The model is the same function; only
the storage changes, to the type llama.cpp's x86 kernels multiply fastest (no 5th bit to unpack):
prompt processing ~1.3x faster on the 2-core machines (docs/local-model.md).

Tensors other than Q5_0 are copied byte for byte, and so are the header and the metadata.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader

Q5_0_BLOCK = 22  # bytes: fp16 d, uint32 high bits, 16 bytes of low nibbles
Q8_0_BLOCK = 34  # bytes: fp16 d, 32 int8
GGUF_HEADER = 24  # magic, version, tensor count (u64), metadata count (u64)
DEFAULT_ALIGNMENT = 32
# Only looked up row by row (get_rows), never multiplied: a faster matmul type buys nothing.
KEEP_AS_IS = frozenset({"token_embd.weight"})


def q5_0_as_q8_0(blocks: np.ndarray) -> np.ndarray:
    """(n, 22) uint8 Q5_0 blocks -> (n, 34) uint8 Q8_0 blocks that dequantize to the same floats."""
    n = blocks.shape[0]
    d = np.ascontiguousarray(blocks[:, :2]).view(np.float16).reshape(n)
    high = np.ascontiguousarray(blocks[:, 2:6]).view(np.uint32).reshape(n, 1)
    low = blocks[:, 6:22]
    # Weight j < 16 is the low nibble of byte j, weight j >= 16 its high nibble; bit j of `high` is bit 4.
    nibbles = (low.reshape(n, 1, 16) >> np.array([0, 4], dtype=np.uint8).reshape(1, 2, 1)) & 0x0F
    fifth = ((high >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)
    q = (nibbles.reshape(n, 32) | (fifth << 4)).astype(np.int16) - 16

    d32 = d.astype(np.float32)
    k = np.ones(n, dtype=np.int16)
    scale = d.copy()
    for factor in (2, 4):  # ascending: the last exact factor wins
        candidate = (d32 / factor).astype(np.float16)
        exact = candidate.astype(np.float32) * factor == d32
        k = np.where(exact, factor, k)
        scale = np.where(exact, candidate, scale)

    out = np.empty((n, Q8_0_BLOCK), dtype=np.uint8)
    out[:, :2] = scale.astype(np.float16).view(np.uint8).reshape(n, 2)
    out[:, 2:] = (q * k[:, None]).astype(np.int8).view(np.uint8)
    return out


def upcast_q5_0(source: Path, target: BinaryIO, keep: Collection[str] = KEEP_AS_IS) -> int:
    """Write `source` to `target` with its Q5_0 tensors (except `keep`) as Q8_0; return how many changed."""
    reader = GGUFReader(source, "r")
    alignment = _alignment(reader)
    metadata_end = max(
        (f.offset + sum(p.nbytes for p in f.parts) for f in reader.fields.values() if not f.name.startswith("GGUF.")),
        default=GGUF_HEADER,
    )

    tensors: list[tuple[str, list[int], GGMLQuantizationType, np.ndarray]] = []
    changed = 0
    for tensor in reader.tensors:
        data = np.asarray(tensor.data).view(np.uint8).reshape(-1)
        kind = tensor.tensor_type
        if kind == GGMLQuantizationType.Q5_0 and tensor.name not in keep:
            data, kind = q5_0_as_q8_0(data.reshape(-1, Q5_0_BLOCK)).reshape(-1), GGMLQuantizationType.Q8_0
            changed += 1
        tensors.append((tensor.name, [int(x) for x in tensor.shape], kind, data))

    target.write(reader.data[:metadata_end].tobytes())  # header (counts unchanged) and every metadata entry
    offset = 0
    for name, shape, kind, data in tensors:
        encoded = name.encode("utf-8")
        target.write(struct.pack("<Q", len(encoded)) + encoded + struct.pack("<I", len(shape)))
        target.write(struct.pack(f"<{len(shape)}Q", *shape) + struct.pack("<IQ", int(kind), offset))
        offset += _padded(data.nbytes, alignment)
    target.write(b"\0" * (_padded(target.tell(), alignment) - target.tell()))  # data starts aligned
    for _, _, _, data in tensors:
        target.write(data.tobytes())
        target.write(b"\0" * (_padded(data.nbytes, alignment) - data.nbytes))
    return changed


def _padded(size: int, alignment: int) -> int:
    return (size + alignment - 1) // alignment * alignment


def _alignment(reader: GGUFReader) -> int:
    field = reader.fields.get("general.alignment")
    return int(field.parts[-1][0]) if field is not None else DEFAULT_ALIGNMENT
