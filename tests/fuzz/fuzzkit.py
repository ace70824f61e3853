"""What every fuzz test shares: the bounded call, the allowed outcomes, the byte mutations.

A parser under fuzzing may do exactly two things: return tensors or raise
:class:`~perpendis.errors.InputError`.  :func:`outcome` runs one call under a wall-clock
alarm (a hang fails instead of stalling the suite) and an address-space cap (a file
that declares 10**12 elements must be refused from its header, not by the allocator),
and measures the peak allocation with ``tracemalloc`` (NumPy reports its buffers
there), so an allocation far beyond the input's size fails even when the machine could
have served it.
"""

from __future__ import annotations

import contextlib
import io
import resource
import signal
import struct
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from numpy.lib import format as npformat
from perpendis.errors import InputError
from perpendis.inputs.tensor import Tensor
from perpendis.numerics.bits import format_of, raw_bits

# Generous: these bound a hang, they do not measure speed.
CALL_SECONDS = 20
# Address space a single parse may add, and traced bytes it may peak at beyond the input.
ADDRESS_SPACE_BUDGET = 1 << 30
PEAK_BYTES_FLOOR = 64 << 20
PEAK_BYTES_PER_INPUT_BYTE = 16

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` in a parser hides it."""


@dataclass
class Outcome:
    tensors: list | None  # what the call returned: tensors, or reports for a comparison
    error: InputError | None
    peak_bytes: int


def _address_space() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


@contextlib.contextmanager
def _bounded() -> Iterator[None]:
    def alarm(signum, frame):
        raise Hang(f"the call did not return within {CALL_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + ADDRESS_SPACE_BUDGET
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def _chain(err: BaseException) -> Iterator[BaseException]:
    while err is not None:
        yield err
        err = err.__cause__ or err.__context__


def outcome(parse: Callable[..., list], data: bytes | str, *args: object, returns: type = Tensor) -> Outcome:
    """Run ``parse(data, *args)`` bounded; fail the test on any outcome but a list of
    ``returns`` (tensors, unless said otherwise) or InputError."""
    size = len(data)
    tracemalloc.start()
    try:
        with _bounded():
            tensors = parse(data, *args)
        error = None
    except InputError as err:
        tensors, error = None, err
    except Hang as err:
        raise AssertionError(f"hang: {err} on a {size}-byte input") from err
    except MemoryError as err:
        raise AssertionError(f"allocation beyond {ADDRESS_SPACE_BUDGET} bytes for a {size}-byte input") from err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    limit = PEAK_BYTES_FLOOR + PEAK_BYTES_PER_INPUT_BYTE * size
    assert peak <= limit, f"a {size}-byte input made the parser allocate {peak} bytes (limit {limit})"
    if error is not None:
        check_message(error)
    else:
        assert isinstance(tensors, list) and all(isinstance(t, returns) for t in tensors), tensors
    return Outcome(tensors, error, peak)


def check_message(error: InputError) -> None:
    """An InputError is for a person: a sentence, no traceback, not a swallowed crash."""
    message = error.message
    assert isinstance(message, str) and len(message.strip()) >= 12, repr(message)
    assert "Traceback" not in message
    hidden = [type(e).__name__ for e in _chain(error.__cause__) if isinstance(e, (MemoryError, Hang))]
    assert not hidden, f"the InputError hides a {hidden[0]}: {message}"


def logical_bits(tensor: Tensor) -> np.ndarray:
    """A tensor's elements as unsigned integers of their format's width, C order."""
    return np.array(raw_bits(tensor.array, tensor.fmt), order="C")


def expected_bits(array: np.ndarray, format_name: str) -> np.ndarray:
    """The bits Perpendis should hold for ``array`` read as ``format_name`` (complex split in two)."""
    fmt = format_of(format_name)
    array = np.array(array, order="C")
    if array.dtype.kind == "c":
        real = np.dtype(f"float{array.dtype.itemsize * 4}").newbyteorder(array.dtype.byteorder)
        array = array.reshape(-1).view(real).reshape(*array.shape, 2)
    if array.dtype.kind == "b":
        return array.astype(fmt.uint)
    return array.view(fmt.uint.newbyteorder(array.dtype.byteorder)).astype(fmt.uint)


def assert_same(tensor: Tensor, array: np.ndarray) -> None:
    """``tensor`` holds exactly ``array``: shape and every element's bits (for bool, its truth:
    a file may store True as any nonzero byte, and NumPy reads it as such)."""
    want = expected_bits(array, tensor.format)
    assert tensor.shape == want.shape, (tensor.shape, want.shape)
    got = logical_bits(tensor)
    if tensor.format == "bool":
        got, want = got != 0, np.array(array, order="C").view(np.uint8) != 0
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- byte mutations

INTERESTING_BYTES = [0x00, 0x01, 0x7F, 0x80, 0xFF, ord("{"), ord("["), ord("\n")]
INTERESTING_INTS = [0, 1, 2, 7, 255, 256, 0x7FFF, 0xFFFF, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63, 2**64 - 1]


@st.composite
def _one_mutation(draw, data: bytes) -> bytes:
    n = len(data)
    kind = draw(st.sampled_from(["truncate", "flip", "byte", "int", "insert", "delete", "duplicate", "append"]))
    at = draw(st.integers(0, max(n - 1, 0)))
    if kind == "truncate":
        return data[:at]
    if kind == "flip" and n:
        return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
    if kind == "byte" and n:
        value = draw(st.sampled_from(INTERESTING_BYTES) | st.integers(0, 255))
        return data[:at] + bytes([value]) + data[at + 1 :]
    if kind == "int":
        width = draw(st.sampled_from([1, 2, 4, 8]))
        value = draw(st.sampled_from(INTERESTING_INTS)) % (1 << (8 * width))
        return data[:at] + value.to_bytes(width, draw(st.sampled_from(["little", "big"]))) + data[at + width :]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 64)) :]
    if kind == "duplicate":
        return data[:at] + data[at : at + draw(st.integers(1, 256))] + data[at:]
    return data + draw(st.binary(min_size=1, max_size=64))


@st.composite
def mutated(draw, data: bytes, max_mutations: int = 3) -> bytes:
    """``data`` after one to ``max_mutations`` random edits: truncation, bit flips, odd integers..."""
    for _ in range(draw(st.integers(1, max_mutations))):
        data = draw(_one_mutation(data))
    return data


# ---------------------------------------------------------------- zip archives


def central_entries(data: bytes) -> list[int]:
    """Offsets of the central directory entries of a zip."""
    offsets, at = [], data.find(b"PK\x01\x02")
    while at >= 0:
        offsets.append(at)
        at = data.find(b"PK\x01\x02", at + 4)
    return offsets


def zip_bomb(n_bytes: int, declared: int | None = None) -> bytes:
    """A real ``.npz`` (zipfile, deflate) of one all-zero float64 array of ``n_bytes``.

    ``declared`` rewrites the size the zip directory claims for it, to make the
    directory lie.
    """
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("bomb.npy", "w", force_zip64=True) as member,
    ):
        npformat.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (n_bytes // 8,)})
        zeros = bytes(1 << 20)
        for _ in range(n_bytes // len(zeros)):
            member.write(zeros)
    data = bytearray(out.getvalue())
    if declared is not None:
        for at in central_entries(bytes(data)):
            struct.pack_into("<I", data, at + 24, declared)
    return bytes(data)
