"""The Q5_0 -> Q8_0 rewrite keeps every weight's value: synthetic blocks, a small GGUF, the real model."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, GGUFWriter
from gguf.quants import dequantize, quantize

from peras.errors import UsageError
from peras.gguf_upcast import q5_0_as_q8_0, upcast_q5_0
from peras.local_model import weights as lm
from peras.settings import Settings


def q5_0_blocks(scales: list[float], seed: int = 0) -> np.ndarray:
    """Q5_0 blocks with the given fp16 scales and every 5-bit value, -16 and 15 included."""
    rng = np.random.default_rng(seed)
    n = len(scales)
    q = rng.integers(0, 32, size=(n, 32), dtype=np.uint8)
    q[:, 0], q[:, 1] = 0, 31  # the extremes: -16 and 15
    low = (q[:, :16] & 0x0F) | ((q[:, 16:] & 0x0F) << 4)
    high = ((q >> 4).astype(np.uint32) << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
    blocks = np.empty((n, 22), dtype=np.uint8)
    blocks[:, :2] = np.array(scales, dtype=np.float16).view(np.uint8).reshape(n, 2)
    blocks[:, 2:6] = high.view(np.uint8).reshape(n, 4)
    blocks[:, 6:] = low
    return blocks


# Normal scales (k = 4), negative ones (quantize_row_q5_0 makes d negative when the largest |x| is
# negative), zero, fp16's largest and smallest normal, and subnormals where d / 4 (k = 2) or even d / 2
# (k = 1) is not exact in fp16.
SCALES = [0.0123, -0.0456, 0.0, 65504.0, 2.0**-14, 2.0**-23, -6 * 2.0**-24, 2.0**-24, 5 * 2.0**-24]


@pytest.mark.core
def test_every_weight_keeps_its_value_bit_for_bit() -> None:
    blocks = q5_0_blocks(SCALES)
    upcast = q5_0_as_q8_0(blocks)
    assert upcast.shape == (len(SCALES), 34)
    before = dequantize(blocks.reshape(-1), T.Q5_0)
    after = dequantize(upcast.reshape(-1), T.Q8_0)
    assert after.tobytes() == before.tobytes()
    ints = upcast[:, 2:].view(np.int8)
    assert ints.min() == -64 and ints.max() == 60  # k = 4 on the normal scales; far from int8's limits
    assert [int(abs(row).max()) for row in ints] == [64, 64, 64, 64, 64, 32, 32, 16, 16]  # 16 * k


@pytest.mark.core
def test_real_weights_quantized_by_gguf_keep_their_values() -> None:
    weights = np.random.default_rng(1).normal(0, 0.02, size=(64, 256)).astype(np.float32)
    blocks = quantize(weights, T.Q5_0).reshape(-1, 22)
    assert (
        dequantize(q5_0_as_q8_0(blocks).reshape(-1), T.Q8_0).tobytes()
        == dequantize(blocks.reshape(-1), T.Q5_0).tobytes()
    )


def small_gguf(path: Path) -> dict[str, np.ndarray]:
    """A GGUF with metadata, an F32 bias, a Q4_0 and two Q5_0 matrices (one the token embeddings)."""
    rng = np.random.default_rng(2)
    tensors = {
        "token_embd.weight": quantize(rng.normal(size=(8, 64)).astype(np.float32), T.Q5_0),
        "blk.0.attn_q.weight": quantize(rng.normal(size=(4, 96)).astype(np.float32), T.Q5_0),
        "blk.0.attn_q.bias": rng.normal(size=4).astype(np.float32),
        "blk.0.ffn_down.weight": quantize(rng.normal(size=(2, 32)).astype(np.float32), T.Q4_0),
    }
    kinds = {"token_embd.weight": T.Q5_0, "blk.0.attn_q.weight": T.Q5_0, "blk.0.ffn_down.weight": T.Q4_0}
    writer = GGUFWriter(path, "qwen2")
    writer.add_uint32("general.alignment", 64)
    writer.add_string("general.name", "tiny")
    writer.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc"])
    for name, data in tensors.items():
        writer.add_tensor(name, data, raw_dtype=kinds.get(name))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


@pytest.mark.core
def test_upcast_rewrites_only_multiplied_q5_0_tensors_and_keeps_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "tiny.gguf"
    small_gguf(source)
    target = tmp_path / "tiny.q8.gguf"
    with target.open("wb") as out:
        assert upcast_q5_0(source, out) == 1

    before, after = GGUFReader(source), GGUFReader(target)
    assert [(t.name, t.tensor_type.name, list(t.shape)) for t in after.tensors] == [
        ("token_embd.weight", "Q5_0", [64, 8]),  # looked up, never multiplied: left as it is
        ("blk.0.attn_q.weight", "Q8_0", [96, 4]),
        ("blk.0.attn_q.bias", "F32", [4]),
        ("blk.0.ffn_down.weight", "Q4_0", [32, 2]),
    ]
    for old, new in zip(before.tensors, after.tensors, strict=True):
        assert dequantize(np.asarray(new.data), new.tensor_type).tobytes() == (
            dequantize(np.asarray(old.data), old.tensor_type).tobytes()
        )
        assert new.data_offset % 64 == 0  # the file's own alignment, not the default 32
    assert {name: field.contents() for name, field in after.fields.items()} == {
        name: field.contents() for name, field in before.fields.items()
    }
    # Deterministic: the same source gives the same bytes, which is what lets peras pin a sha256.
    again = io.BytesIO()
    upcast_q5_0(source, again)
    assert again.getvalue() == target.read_bytes()


@pytest.mark.model
def test_served_model_is_the_pinned_upcast_with_the_same_weights() -> None:
    settings = Settings()
    served = lm.ensure_weights(settings)
    assembled = settings.local_cache_dir / "models" / lm.DEFAULT_MODEL.file_name
    assert served.name == "qwen2.5-coder-0.5b-instruct-q4_k_m.q5_0-as-q8_0.gguf"
    assert served.stat().st_size == 585_845_632
    assert lm._sha256(served) == "6b3e9725dba9173adf0f3179b1503899e4a01f6f36b009f9ecffa203cd2defb5"

    changed = 0
    for old, new in zip(GGUFReader(assembled).tensors, GGUFReader(served).tensors, strict=True):
        assert (old.name, list(old.shape)) == (new.name, list(new.shape))
        if old.tensor_type == new.tensor_type:
            assert np.asarray(old.data).tobytes() == np.asarray(new.data).tobytes()
            continue
        assert (old.tensor_type, new.tensor_type) == (T.Q5_0, T.Q8_0)
        assert dequantize(np.asarray(new.data), T.Q8_0).tobytes() == (
            dequantize(np.asarray(old.data), T.Q5_0).tobytes()
        )
        changed += 1
    assert changed == 132  # attn_q, attn_k, attn_output, ffn_gate, ffn_up in 24 layers; attn_v in 12


def tiny_spec(tmp_path: Path, upcast_sha256: str | None = None) -> tuple[lm.ModelSpec, list[Path]]:
    """A spec whose two parts join into small_gguf's file, pinned to that file and to its upcast."""
    source = tmp_path / "source.gguf"
    small_gguf(source)
    whole = source.read_bytes()
    parts = [tmp_path / "p0.bin", tmp_path / "p1.bin"]
    parts[0].write_bytes(whole[:100])
    parts[1].write_bytes(whole[100:])
    rewritten = io.BytesIO()
    upcast_q5_0(source, rewritten)
    spec = lm.ModelSpec(
        name="tiny",
        file_name="tiny.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=(
            lm.WeightPart("tiny-part0", "1.0", "p0.bin", 100),
            lm.WeightPart("tiny-part1", "1.0", "p1.bin", len(whole) - 100),
        ),
        upcast=lm.Upcast(
            "tiny.q8.gguf",
            len(rewritten.getvalue()),
            upcast_sha256 or hashlib.sha256(rewritten.getvalue()).hexdigest(),
        ),
    )
    return spec, parts


@pytest.mark.core
def test_ensure_weights_serves_the_upcast_and_remakes_only_what_is_damaged(tmp_path: Path, monkeypatch) -> None:
    spec, parts = tiny_spec(tmp_path)
    settings = Settings(local_cache_dir=tmp_path / "cache")
    models = settings.local_cache_dir / "models"
    monkeypatch.setattr(lm, "locate_parts", lambda _spec: parts)
    served = lm.ensure_weights(settings, spec)
    assert served == models / "tiny.q8.gguf"
    expected = served.read_bytes()
    assert sorted(p.name for p in models.iterdir()) == [
        "tiny.gguf", "tiny.gguf.verified", "tiny.q8.gguf", "tiny.q8.gguf.verified"
    ]  # fmt: skip

    # Stamped: nothing is hashed, assembled or rewritten.
    with monkeypatch.context() as patched:
        patched.setattr(lm, "_sha256", lambda _p: pytest.fail("re-hashed a stamped file"))
        patched.setattr(lm, "locate_parts", lambda _spec: pytest.fail("re-assembled"))
        assert lm.ensure_weights(settings, spec) == served

    # The served file was damaged (same size): rewritten from the assembled file, which is still good.
    served.write_bytes(b"x" * len(expected))
    with monkeypatch.context() as patched:
        patched.setattr(lm, "locate_parts", lambda _spec: pytest.fail("re-assembled"))
        assert lm.ensure_weights(settings, spec).read_bytes() == expected


@pytest.mark.core
def test_an_upcast_that_misses_its_pin_is_refused_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    spec, parts = tiny_spec(tmp_path, upcast_sha256="0" * 64)
    settings = Settings(local_cache_dir=tmp_path / "cache")
    monkeypatch.setattr(lm, "locate_parts", lambda _spec: parts)
    with pytest.raises(UsageError) as info:
        lm.ensure_weights(settings, spec)
    assert str(info.value).startswith("rewriting tiny.gguf with Q8_0 matrices gave a file that has sha256 ")
    assert str(info.value).endswith(
        f"expected {'0' * 64} (corrupted); check that gguf is the pinned version (pip install -e .) "
        "and run scripts/setup_local_model.sh"
    )
    models = settings.local_cache_dir / "models"
    assert sorted(p.name for p in models.iterdir()) == ["tiny.gguf", "tiny.gguf.verified"]
