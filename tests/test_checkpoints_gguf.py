"""GGUF checkpoints against the Hugging Face export they were converted from.

The committed pair (``tests/fixtures/checkpoints/gguf_llama``, made by ``make_gguf.py``
with ``transformers`` and ``gguf.GGUFWriter``) is a tiny llama in safetensors and the
same weights in GGUF as llama.cpp's converter writes them: llama.cpp names, Q and K
rows permuted, norms F32, other weights F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1.
Every quantised tensor is judged against its block grid; the broken conversions
(Q and K not permuted, a block's scale corrupted) are caught and named.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from perpendis.checkpoints import compare_checkpoints, folder
from perpendis.checkpoints.rename import preset
from perpendis.cli.main import main
from perpendis.errors import InputError
from perpendis.inputs.formats import gguf as reader
from perpendis.inputs.formats.buffer import view_reader

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"
sys.path.insert(0, str(FIXTURES))
import make_gguf  # noqa: E402  (after the skips: it imports gguf and transformers)

PAIR = FIXTURES / "gguf_llama"
RULES = preset("gguf-llama")


def rows_of(report):
    return {r.name: r for r in report.tensors}


def test_every_tensor_of_the_real_conversion_is_an_exact_conversion():
    report = compare_checkpoints(folder(PAIR / "gguf"), folder(PAIR / "hf"), rules=RULES)
    rows = rows_of(report)
    assert len(rows) == 21 and not report.only_a and not report.only_b
    assert {r.verdict for r in rows.values()} == {"converted", "identical"}
    q = rows["model.layers.0.self_attn.q_proj.weight"]
    assert q.a_name == "blk.0.attn_q.weight" and q.dtype_a == "Q8_0" and q.dtype_b == "float32"
    assert "within half a step of its block's grid" in q.description
    kinds = {r.dtype_a for r in rows.values()}
    assert kinds == {"float32", "float16", "bfloat16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}
    assert any("permuted for llama.cpp's rotary layout" in n and "4 heads" in n for n in report.notes)


@pytest.mark.slow  # builds the transformers model
def test_q_and_k_left_unpermuted_are_caught(tmp_path):
    """The classic broken converter: Q and K copied in Hugging Face's row order."""
    hf, gg = make_gguf.make(tmp_path, permute_qk=False)
    rows = rows_of(compare_checkpoints(folder(gg), folder(hf), rules=RULES))
    for layer in (0, 1):
        for proj, kind in (("q_proj", "Q8_0"), ("k_proj", "Q4_0")):
            row = rows[f"model.layers.{layer}.self_attn.{proj}.weight"]
            assert row.verdict == "investigate" and f"off their {kind} block's grid" in row.description
    assert rows["model.layers.0.self_attn.v_proj.weight"].verdict == "converted"


def test_a_corrupted_block_scale_is_named(tmp_path):
    """One Q8_0 block's float16 scale doubled in the file: its values are off the grid but
    the smallest (|q| <= 1, which the doubled half step still covers)."""
    target = tmp_path / "gguf"
    target.mkdir()
    data = bytearray((PAIR / "gguf" / "model.gguf").read_bytes())
    entries, _ = reader.index(*view_reader(bytes(data)))
    (up,) = [e for e in entries if e.name == "blk.1.ffn_up.weight"]
    block = up.begin + 5 * 34  # the sixth block: values 160..191, row 2 of 64 columns
    scale = np.frombuffer(bytes(data[block : block + 2]), dtype=np.float16)[0]
    data[block : block + 2] = np.float16(scale * 2).tobytes()
    q = np.frombuffer(bytes(data[block + 2 : block + 34]), dtype=np.int8).astype(int)
    least, most = np.count_nonzero(np.abs(q) >= 2), np.count_nonzero(q)
    (target / "model.gguf").write_bytes(bytes(data))
    rows = rows_of(compare_checkpoints(folder(target), folder(PAIR / "hf"), rules=RULES))
    row = rows["model.layers.1.mlp.up_proj.weight"]
    assert row.verdict == "investigate"
    off = int(row.description.split(" of 8192 values are off their Q8_0 block's grid: the worst at [2, ")[0])
    assert least <= off <= most and off > 20
    assert sum(r.verdict == "investigate" for r in rows.values()) == 1


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_dequantised_values_are_the_gguf_packages(kind):
    """The reader's dequantisation is bit for bit gguf.quants.dequantize's, and the original
    lies within every value's grid bound."""
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32) * np.float32(0.02)
    x[3, 5] = -0.3  # a large value of the other sign than its block's largest: clipped in Q4_0
    x[3, 6] = 0.3
    qtype = gguf.GGMLQuantizationType[kind]
    raw = gguf.quants.quantize(x, qtype)
    values, bound, low, high = reader.dequantise(raw.reshape(-1), kind)
    expected = gguf.quants.dequantize(raw, qtype).reshape(-1)
    assert np.array_equal(values.view(np.uint32), expected.astype(np.float32).view(np.uint32))
    assert np.all(np.abs(values - np.clip(x.reshape(-1), low, high)) <= bound)


def test_the_cli_pairs_by_the_preset_and_exits_0(capsys):
    argv = ["checkpoints", str(PAIR / "gguf"), str(PAIR / "hf"), "--rename-preset", "gguf-llama", "--json"]
    assert main([*argv, "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["tensors"] == 21


def test_a_truncated_header_and_an_unknown_type_are_problems(tmp_path):
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "model.gguf").write_bytes((PAIR / "gguf" / "model.gguf").read_bytes()[:600])
    report = compare_checkpoints(folder(cut), folder(PAIR / "hf"), rules=RULES)
    assert any("cut short" in p.message and p.file == "model.gguf" for p in report.problems)

    k = tmp_path / "k"
    k.mkdir()
    writer = gguf.GGUFWriter(str(k / "model.gguf"), "llama")
    writer.add_tensor("blk.0.ffn_up.weight", np.zeros((4, 144), np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    report = compare_checkpoints(folder(k), folder(PAIR / "hf"), rules=RULES)
    assert any("Q4_K, which is not compared here" in p.message for p in report.problems)


def test_not_gguf_is_refused():
    with pytest.raises(InputError, match="GGUF magic"):
        reader.index(*view_reader(b"GGUX" + bytes(40)))
