"""Fuzzing ``torch.save`` reading: the committed fixtures and files torch writes here,
mutated as bytes, with their pickle mutated (and the zip rebuilt so its CRCs still
hold, which gets the mutation past the zip layer into the unpickler), with hostile
storage sizes, and with pickles that describe absurd views or shared-reference bombs.

Whatever Perpendis reads, ``torch.load(weights_only=True)`` must read to the same
tensors, names and bits.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, mutated, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs import formats

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"
COMMITTED = [p.read_bytes() for p in sorted(FIXTURES.glob("*.pt"))]
RAW = {torch.bfloat16: torch.uint16, torch.float8_e4m3fn: torch.uint8, torch.float8_e5m2: torch.uint8}
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int64, torch.uint8,
          torch.bool, torch.complex64, torch.float8_e5m2]  # fmt: skip


@st.composite
def fresh_file(draw) -> bytes:
    """``torch.save`` of tensors (some views, some sharing storage) in dicts, lists and tuples."""
    base = torch.from_numpy(draw(hnp.arrays(np.float32, (4, 6), elements={"allow_nan": False})))
    pool = [
        base.to(draw(st.sampled_from(DTYPES))),
        base.t(),
        base[1:, ::2],
        base.expand(2, 4, 6)[1],
        base[0, 0],
        torch.nn.Parameter(base[2].clone()),
    ]
    leaves = st.sampled_from(pool) | st.integers() | st.text(max_size=3)
    obj = draw(
        st.recursive(
            leaves,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
            max_leaves=6,
        )
    )
    out = io.BytesIO()
    torch.save({"t": pool[0], "x": obj}, out)
    return out.getvalue()


def seed_file(zips_only: bool = False) -> st.SearchStrategy[bytes]:
    # Indices, not the bytes, so that a failure report stays readable.
    seeds = [data for data in COMMITTED if data[:4] == b"PK\x03\x04"] if zips_only else COMMITTED
    return st.integers(0, len(seeds) - 1).map(seeds.__getitem__) | fresh_file()


def flatten(obj: object, path: str | None, name: str | None) -> list[tuple[str | None, object]]:
    if isinstance(obj, torch.Tensor):
        return [(path if path is not None else name, obj)]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return []
    return [pair for key, value in items for pair in flatten(value, f"{path}.{key}" if path else str(key), name)]


def torch_reads(data: bytes) -> list[tuple[str | None, np.ndarray]]:
    reference = flatten(torch.load(io.BytesIO(data), weights_only=True), None, "x.pt")
    arrays = []
    for name, value in reference:
        value = value.detach().resolve_conj().contiguous()
        arrays.append((name, value.view(RAW[value.dtype]).numpy() if value.dtype in RAW else value.numpy()))
    return arrays


def same_as(tensors, reference: list[tuple[str | None, np.ndarray]]) -> None:
    assert [t.name for t in tensors] == [name for name, _ in reference]
    for tensor, (_, array) in zip(tensors, reference, strict=True):
        assert_same(tensor, array)


def same_as_torch(tensors, data: bytes, original: bytes | None = None) -> None:
    """Perpendis read what torch reads; or, where torch refuses a mutated file that
    Perpendis still reads (data before the archive, a member Perpendis does not need
    dropped), what torch reads from ``original``: the file with only the mutations that
    change its meaning."""
    try:
        reference = torch_reads(data)
    except Exception:
        if original is None:
            raise
        reference = torch_reads(original)
    same_as(tensors, reference)


def rezip(data: bytes, change) -> bytes:
    """The archive rebuilt member by member, ``change(name, content)`` applied, CRCs recomputed."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for info in source.infolist():
            content = change(info.filename, source.read(info))
            if content is not None:
                archive.writestr(info.filename, content)
    return out.getvalue()


@FUZZ
@given(fresh_file())
def test_fresh_files_read_exactly(data):
    result = outcome(formats.read, data, "x.pt")
    assert result.error is None, result.error
    same_as_torch(result.tensors, data)


def check(data: bytes, original: bytes) -> None:
    result = outcome(formats.read, data, "x.pt")
    if result.error is None and result.tensors[0].source == "torch.save (zip)":
        same_as_torch(result.tensors, data, original)


@FUZZ
@given(st.data())
def test_mutated_bytes_read_exactly_or_fail_cleanly(data):
    original = data.draw(seed_file())
    check(data.draw(mutated(original)), original)


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_pickles_read_exactly_or_fail_cleanly(data):
    def change(name: str, content: bytes) -> bytes:
        return data.draw(mutated(content, max_mutations=2)) if name.endswith("data.pkl") else content

    original = data.draw(seed_file(zips_only=True))
    check(rezip(original, change), original)


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_storages_and_members_fail_cleanly(data):
    """Storages cut short, grown or changed, the byteorder member changed, members dropped."""
    meaningful: dict[str, bytes | None] = {}

    def change(name: str, content: bytes) -> bytes | None:
        action = data.draw(st.sampled_from(["keep", "keep", "mutate", "drop"]))
        if name.endswith("/byteorder") and action == "mutate":
            content = data.draw(st.sampled_from([b"big", b"little", b"", b"middle"]))
        elif action == "drop":
            content = None
        elif action == "mutate":
            content = data.draw(mutated(content))
        if "/data/" in name or name.endswith(("/byteorder", "/data.pkl")):
            meaningful[name] = content
        return content

    original = data.draw(seed_file(zips_only=True))
    broken = rezip(original, change)
    # What the mutations that change the tensors make of the file, the others undone.
    check(broken, rezip(original, lambda name, content: meaningful.get(name, content)))


class _Rebuild:
    """Pickles as a call of ``torch._utils._rebuild_tensor_v2`` on storage "0", as torch writes it."""

    def __init__(self, size, stride, offset=0):
        self.args = (offset, size, stride)

    def __reduce__(self):
        offset, size, stride = self.args
        return torch._utils._rebuild_tensor_v2, (_Storage(), offset, size, stride, False, {})


class _Storage:
    pass


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", torch.HalfStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None


def view_pickle(size, stride, offset=0) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=2).dump({"v": _Rebuild(size, stride, offset)})
    return out.getvalue()


@FUZZ
@given(
    st.lists(st.sampled_from([0, 1, 3, 2**20, 2**30, 2**31 - 1, 2**31, 2**62]), min_size=1, max_size=3)
    | st.integers(60, 80).map(lambda n: [1] * n),
    st.lists(st.sampled_from([0, 1, 2, 2**40, -1]), min_size=1, max_size=3),
    st.sampled_from([0, 1, 3, 2**63 - 1, -1]),
    st.sampled_from([b"little", b"big"]),
)
def test_absurd_views_are_refused_or_cheap(size, stride, offset, byteorder):
    """A tiny storage viewed with huge sizes, stride 0 (as ``expand`` makes), odd offsets."""
    seed = COMMITTED[[p.name for p in sorted(FIXTURES.glob("*.pt"))].index("torch_tensor.pt")]
    pkl = view_pickle(tuple(size), tuple(stride[: len(size)] + [0] * (len(size) - len(stride))), offset)

    def change(name: str, content: bytes) -> bytes:
        if name.endswith("data.pkl"):
            return pkl
        return byteorder if name.endswith("/byteorder") else content

    result = outcome(formats.read, rezip(seed, change), "x.pt")
    assert result.error is not None or result.tensors[0].size <= 2**31


def test_shared_reference_bomb_is_refused():
    """A pickle of 2**40 paths through 40 shared lists, each the pair [previous, previous]."""
    seed = COMMITTED[[p.name for p in sorted(FIXTURES.glob("*.pt"))].index("torch_tensor.pt")]
    bomb = [0]
    for _ in range(40):
        bomb = [bomb, bomb]
    pkl = pickle.dumps(bomb, protocol=2)
    data = rezip(seed, lambda name, content: pkl if name.endswith("data.pkl") else content)
    result = outcome(formats.read, data, "x.pt")
    assert result.error is not None


@pytest.mark.parametrize("index", [2**27, 2**31 - 1, 2**32 - 1])
def test_huge_memo_index_is_cheap(index):
    """Found by fuzzing the pickle: ``LONG_BINPUT`` with a huge memo index made CPython's C
    unpickler grow its memo table to that many entries (2 GiB from a 1.5 kB file)."""
    seed = COMMITTED[[p.name for p in sorted(FIXTURES.glob("*.pt"))].index("torch_tensor.pt")]
    pkl = b"\x80\x02]r" + index.to_bytes(4, "little") + b"."
    data = rezip(seed, lambda name, content: pkl if name.endswith("data.pkl") else content)
    assert outcome(formats.read, data, "x.pt").error is not None


@pytest.mark.parametrize("change", [b"\x00\x00", b"\x00"])
def test_storage_of_another_size_than_declared_is_refused(change):
    """Found by the storage mutations: extra bytes before a storage shifted every value."""
    seed = COMMITTED[[p.name for p in sorted(FIXTURES.glob("*.pt"))].index("torch_tensor.pt")]
    data = rezip(seed, lambda name, content: change + content if name.endswith("/data/0") else content)
    result = outcome(formats.read, data, "x.pt")
    assert result.error is not None and "'0'" in result.error.message
