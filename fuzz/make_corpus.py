"""Write the seed corpus for the atheris fuzzers: small files made by the real libraries.

Run from anywhere: ``python fuzz/make_corpus.py`` (needs numpy, ml_dtypes, safetensors,
onnx, torch and polygraphy, all in requirements-dev.txt).  Seeds are kept small (a few
hundred bytes) because libFuzzer mutates small inputs far more productively.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx.numpy_helper
import safetensors.numpy
import torch
from polygraphy.comparator import RunResults
from polygraphy.comparator.struct import IterationResult
from polygraphy.json import to_json

HERE = Path(__file__).resolve().parent / "corpus"


def npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npz(compressed: bool, **arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, **arrays)
    return out.getvalue()


def torch_save(obj: object) -> bytes:
    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


def file_seeds() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    base = torch.from_numpy(x)
    results = RunResults()
    results.append(("onnxrt-runner", [IterationResult({"out": x}, runner_name="onnxrt-runner")]))
    return {
        "f32.npy": npy(x),
        "f16_fortran.npy": npy(np.asfortranarray(x.astype(np.float16))),
        "f64_big_endian.npy": npy(x.astype(">f8")),
        "c64.npy": npy(x.astype(np.complex64)),
        "i8.npy": npy(np.arange(-3, 3, dtype=np.int8)),
        "bool.npy": npy(x > 0),
        "bf16.npy": npy(x.astype(ml_dtypes.bfloat16)),
        "f8e5m2.npy": npy(x.astype(ml_dtypes.float8_e5m2)),
        "scalar.npy": npy(np.float32(1.5)),
        "stored.npz": npz(False, a=x, b=np.arange(3)),
        "compressed.npz": npz(True, a=x),
        "tensors.safetensors": safetensors.numpy.save({"w": x, "b": np.arange(3, dtype=np.int64)}),
        "tensor.pt": torch_save(base.half()),
        "state_dict.pt": torch_save({"w": base, "v": base.t(), "e": base.expand(2, 2, 3)[1], "n": 3}),
        "bf16.pt": torch_save({"w": base.to(torch.bfloat16)}),
        "raw.pb": onnx.numpy_helper.from_array(x, "x").SerializeToString(),
        "typed.pb": onnx.helper.make_tensor("y", onnx.TensorProto.FLOAT16, [3], [1.0, 2.0, -0.5]).SerializeToString(),
        "outputs.json": to_json(results).encode(),
        "inputs.json": to_json([{"x": x[0]}]).encode(),
    }


def text_seeds() -> dict[str, str]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    t = torch.from_numpy(x)
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        numpy_repr = repr(x)
    return {
        "numpy_repr.txt": numpy_repr,
        "numpy_default.txt": repr(x.astype(np.float16)),
        "numpy_print.txt": str(x),
        "numpy_int.txt": repr(np.arange(6, dtype=np.int16).reshape(2, 3)),
        "numpy_complex.txt": repr(x[0].astype(np.complex64) * 1j),
        "numpy_bool.txt": repr(x > 0),
        "numpy_scalar.txt": repr(np.float32(x[0, 0])),
        "torch_repr.txt": repr(t),
        "torch_half.txt": repr(t.half()),
        "torch_bf16.txt": repr(t.to(torch.bfloat16)),
        "torch_bool.txt": repr(t > 0),
        "torch_param.txt": repr(torch.nn.Parameter(t)),
        "two_tensors.txt": repr(t) + "\n" + repr(t + 1e-7),
        "tolist.txt": repr(x.tolist()),
        "hex.txt": repr([float(v).hex() for v in x.ravel()]).replace("'", ""),
        "csv.txt": "a,b,c\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in x),
    }


def main() -> None:
    for name, data in file_seeds().items():
        (HERE / "formats" / name).write_bytes(data)
    for name, text in text_seeds().items():
        (HERE / "text" / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
