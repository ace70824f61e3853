"""Pasted text → tensors: every printed form of a tensor we know, checked for lost digits.

``parse_text`` accepts what people paste: PyTorch, NumPy, JAX and TensorFlow ``repr``
and ``print`` output (REPL prompts and all), NumPy scalars, ``tolist()`` output,
``float.hex()`` lists, one number per line and CSV.  It refuses what it cannot compare
honestly — a summarised print, whose ``...`` hides values, or a masked array — with
the call that prints the text properly.  Text printed with too few digits to pin every
value is accepted but marked ``lossless=False``, because the report then compares the
printed decimals, not the values the library held (see :mod:`perpendis.inputs.text.numbers`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from ..errors import InputError, SummarisedPrint
from ..numerics.bits import Format, format_of, from_float64
from .formats.limits import TEXT_MAX_CHARS
from .tensor import Tensor, from_numpy
from .text.clean import clean
from .text.grid import blank, shape_of, token_bounds
from .text.numbers import Tokens, decimals, digits_needed, exactness, join_complex, split_complex, whole_values
from .text.split import Piece, split

_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "bool_": "bool",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
# The dtype each library gives a literal when none is printed, by kind of element.
_DEFAULT_DTYPES = {
    "PyTorch": {"float": "float32", "int": "int64", "complex": "complex64"},
    "JAX": {"float": "float32", "int": "int32", "complex": "complex64"},
    "": {"float": "float64", "int": "int64", "complex": "complex128"},
}
_FULL_PRINT = {
    "PyTorch": 'torch.set_printoptions(profile="full")',
    "": "np.set_printoptions(threshold=sys.maxsize) (after import sys)",
}
_UNREADABLE = "some values could not be read as numbers; paste the text as printed"
_TWO_TOKENS = re.compile(r"[^\s\[\]][\s\[\]]+[^\s\[\]]")  # found near the start of a long print


def parse_text(text: str) -> list[Tensor]:
    """The tensor printed in ``text`` (or the two, in order, when it holds two).

    Text longer than ``TEXT_MAX_CHARS`` is refused before any work on it, since parsing
    it could exhaust the page's memory; the error points to a ``.npy`` file instead.
    """
    if len(text) > TEXT_MAX_CHARS:
        raise InputError(
            f"the text is {len(text)} characters ({len(text) / 2**20:.1f} MiB), more than the limit TEXT_MAX_CHARS "
            f"= {TEXT_MAX_CHARS} ({TEXT_MAX_CHARS // 2**20} MiB), beyond which parsing can exhaust the page's "
            "memory: save the tensor with np.save('a.npy', x) (x.numpy() for a torch tensor) and drop the .npy "
            "file instead"
        )
    if text.lstrip().startswith("{"):
        # json.dumps of a dict: its numbers sit inside lists under keys, which would otherwise
        # read as a ragged list.
        raise InputError(
            "this is a JSON object (a dict of names to values), not one tensor: paste the list of one "
            "entry, or save the tensors with np.savez('a.npz', **tensors) and open the .npz file",
            where="line 1",
        )
    return [_tensor(piece) for piece in split(clean(text))]


def _tensor(piece: Piece) -> Tensor:
    """One pasted piece → its tensor: refuse a summarised print, find the element format and
    the shape, read the values, and say whether the printed digits pin them."""
    body = piece.body
    where = f"line {piece.line}"
    form, source, printer = _form(piece)
    # Positions of the points serve the test for "..." here and the digit counts later.
    data = body.encode("ascii")
    dots: np.ndarray | None = _points_of_a_full_print(piece, data, source)
    notes = list(piece.notes)
    if form == "table":
        body, header_notes = _drop_header(body)
        notes += header_notes
    kind = _element_kind(body, form)
    fmt, is_complex = _element_format(piece, kind, where)
    if is_complex:
        body = join_complex(body)
    if body is not piece.body:
        data, dots = body.encode("ascii"), None
    flat = blank(data, commas=fmt.is_float and not is_complex and form in ("list", "wrapped"))
    starts = token_bounds(flat)[0]
    shape, source = _shape(piece, form, data, starts, _line_counter(piece.line, body), source)
    if is_complex:
        flat, dots = split_complex(flat.decode("ascii")).encode("ascii"), None
    count = 2 * starts.size if is_complex else starts.size
    stored, lossless, digits = _values(piece, Tokens(flat, token_bounds(flat), dots), count, fmt, form, printer,
                                       notes)
    if piece.dtype is None and form in ("wrapped", "print"):
        notes.append(f"no dtype printed: taken as {_dtype_name(fmt, is_complex)}, the default of {source}")
    if is_complex:
        complex_dtype = np.dtype(f"complex{2 * fmt.width}")
        tensor = from_numpy(stored.view(complex_dtype).reshape(shape), source, notes=notes)
    else:
        tensor = Tensor(stored.reshape(shape), fmt.name, source, notes=notes)
    tensor.lossless, tensor.digits = lossless, digits
    # A library's repr fixes the dtype by convention when it prints none (PyTorch's float32,
    # NumPy's float64); a print, a list or hex strings say nothing of it.
    tensor.dtype_assumed = piece.dtype is None and fmt.is_float and form != "wrapped"
    if not lossless and printer == "fixed":
        tensor.decimals = _decimals(flat)
    return tensor


def _line_counter(first: int, body: str) -> Callable[[int], str]:
    """``line N`` of an offset into ``body`` whose first line is ``first``: where an error points."""
    return lambda offset: f"line {first + body.count(chr(10), 0, offset)}"


def _points_of_a_full_print(piece: Piece, data: bytes, source: str) -> np.ndarray:
    """The offsets of the points in ``data``, after refusing a summarised print: three points
    in a row are the ``...`` that stands for values never printed."""
    dots = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("."))
    if (ellipsis := np.flatnonzero(dots[2:] - dots[:-2] == 2)).size:
        fix = _FULL_PRINT.get(piece.library, _FULL_PRINT[""])
        raise SummarisedPrint(
            f"the {source} was summarised: '...' stands for values that were not printed; print everything "
            f"with {fix} and paste again",
            fix=fix,
            where=_line_counter(piece.line, piece.body)(int(dots[ellipsis[0]])),
        )
    return dots


def _shape(piece: Piece, form: str, data: bytes, starts: np.ndarray, line_at: Callable[[int], str],
           source: str) -> tuple[tuple[int, ...], str]:
    """The shape the text's brackets or table rows say (and the source, which a table may
    name), or the shape the print states when it holds as many values."""
    where = f"line {piece.line}"
    if form == "table":
        shape, source = _table_shape(np.frombuffer(data, dtype=np.uint8), starts, line_at, source)
    elif b"[" in data:
        shape = shape_of(data, starts, line_at)
    else:
        shape = ()
        if starts.size != 1:
            raise InputError(f"expected one number in the {source}, found {starts.size}", where=where)
    if piece.shape is not None and piece.shape != shape:
        if math.prod(piece.shape) != math.prod(shape):
            raise InputError(
                f"the printed shape {piece.shape} does not match the {math.prod(shape)} values printed",
                where=where,
            )
        shape = piece.shape
    return shape, source


def _values(piece: Piece, tokens: Tokens, count: int, fmt: Format, form: str, printer: str,
            notes: list[str]) -> tuple[np.ndarray, bool, int | None]:
    """The stored values (the format's bit patterns), whether the printed digits pin them
    all, and how many digits they carry; a note is added when they do not."""
    where = f"line {piece.line}"
    if not fmt.is_float:
        # str.split also splits at U+001C..U+001F, which the token scan does not.
        words = tokens.flat.decode("ascii").split()
        if len(words) != count:
            raise InputError(_UNREADABLE, where=where)
        return whole_values(words, fmt, where), True, None
    printed = decimals(tokens, form == "hex", where)
    if printed.size != count or tokens.starts.size != count:
        raise InputError(_UNREADABLE, where=where)
    stored = from_float64(printed, fmt)
    found = exactness(tokens, printed, stored, "shortest" if form == "hex" else printer, fmt)
    if not found.exact:
        notes.append(_lossy_note(piece.library, fmt, found.n_inexact, count, found.digits))
    return stored, found.exact, found.digits


def _decimals(flat: bytes) -> int | None:
    """The most digits after the point in a fixed-point print (None if it has exponents)."""
    text = flat.decode("ascii")
    if "e" in text or "E" in text:
        return None
    return max((len(t.split(".", 1)[1]) for t in text.replace(",", " ").split() if "." in t), default=0)


def _form(piece: Piece) -> tuple[str, str, str]:
    """The form of a piece, the source name the report shows, and the kind of printer that made it."""
    if piece.library:
        if piece.library == "PyTorch":
            return "wrapped", piece.source, "fixed"
        # NumPy 2 prints a scalar's repr with the shortest digits that round-trip.
        shortest = piece.source in ("NumPy scalar repr", "list of NumPy scalars")
        return "wrapped", piece.source, "shortest" if shortest else "maxprec"
    body = piece.body
    # Each "in" scans the whole body: a one-character test (memchr) first skips the slower ones.
    if ("x" in body or "X" in body) and ("0x" in body or "0X" in body):
        return "hex", "float.hex list", "shortest"
    if "[" in body:
        # Python separates items with commas, NumPy's print with spaces.  A lone number
        # has neither: NumPy prints integral floats as "1.", Python as "1.0".
        if "," in body:
            return "list", "nested list", "shortest"
        several = _TWO_TOKENS.search(body) is not None
        if not (several or re.search(r"\d\.(?!\d)", body)):
            return "list", "nested list", "shortest"
        return "print", "NumPy print", "maxprec"
    return "table", "CSV column" if "," in body else "one number per line", "shortest"


def _element_kind(body: str, form: str) -> str:
    """ "bool", "complex", "float" or "int", from the characters of the printed numbers."""
    if ("T" in body and "True" in body) or ("F" in body and "False" in body):
        return "bool"
    if "j" in body:
        return "complex"
    if form == "hex":
        return "float"
    if not any(c in body for c in "0123456789"):
        return "empty"  # no numbers: any printed dtype fits, and the default is float
    if any(mark in body for mark in (".", "e", "E", "nan", "inf")):
        return "float"
    return "int"


def _element_format(piece: Piece, kind: str, where: str) -> tuple[Format, bool]:
    """The element format of a piece (its printed dtype, or the library's default) and if it is complex."""
    if piece.dtype is None:
        defaults = _DEFAULT_DTYPES.get(piece.library, _DEFAULT_DTYPES[""])
        name = "bool" if kind == "bool" else defaults["float" if kind == "empty" else kind]
    else:
        name = piece.dtype.rsplit(".", 1)[-1]
        name = _ALIASES.get(name, name)
    is_complex = name.startswith("complex")
    if is_complex and name in ("complex64", "complex128"):
        name = f"float{int(name[7:]) // 2}"
    try:
        fmt = format_of(name)
    except KeyError:
        raise InputError(
            f"dtype {piece.dtype} cannot be compared; Perpendis compares float16, bfloat16, float32, float64, "
            "float8, integer, bool and complex64/complex128 tensors (convert it first, e.g. to float32)",
            where=where,
        ) from None
    printed_kind = "complex" if is_complex else ("float" if fmt.is_float else ("bool" if fmt.kind == "bool" else "int"))
    if printed_kind != kind and kind != "empty" and not (printed_kind == "float" and kind == "int"):
        raise InputError(
            f"the dtype printed is {piece.dtype} but the values look like {kind} values; "
            "paste the text as printed, without editing it",
            where=where,
        )
    return fmt, is_complex


def _drop_header(body: str) -> tuple[str, list[str]]:
    """CSV text without a header line of column names (and a note naming them)."""
    first, _, rest = body.lstrip("\n").partition("\n")
    fields = first.replace(",", " ").split()
    if not fields or all(_is_number(f) for f in fields):
        return body, []
    return rest, [f"skipped the header line {first.strip()!r}"]


def _is_number(field: str) -> bool:
    if field in ("True", "False"):
        return True
    try:
        float.fromhex(field) if "0x" in field.lower() else complex(field.strip("'\""))
    except ValueError:
        return False
    return True


def _table_shape(buf: np.ndarray, starts: np.ndarray, line_at, source: str) -> tuple[tuple[int, ...], str]:
    """Shape of numbers laid out one row per line: (rows,) for one column, else (rows, columns)."""
    if starts.size == 0:
        raise InputError("nothing to compare: the text holds no numbers")
    line_of_token = np.searchsorted(np.flatnonzero(buf == ord("\n")), starts)
    per_line = np.bincount(line_of_token)
    used = np.flatnonzero(per_line)
    counts = per_line[used]
    bad = np.flatnonzero(counts != counts[0])
    if bad.size:
        first_bad = int(starts[np.searchsorted(line_of_token, used[bad[0]])])
        raise InputError(
            f"this line has {int(counts[bad[0]])} values where the first line has {int(counts[0])}; "
            "every row must have the same number of columns",
            where=line_at(first_bad),
        )
    columns = int(counts[0])
    if columns == 1:
        return (int(used.size),), source
    return (int(used.size), columns), "CSV columns"


def _lossy_note(library: str, fmt: Format, n_inexact: int, n: int, digits: int | None) -> str:
    if library == "PyTorch":
        fix = f"torch.set_printoptions(precision={digits_needed(fmt) - 1}, sci_mode=True)"
    else:
        fix = 'np.set_printoptions(floatmode="unique")'
    return (
        f"{n_inexact} of {n} printed values have too few digits (as few as {digits} significant) to pin one "
        f"{fmt.name} value; they are read as the nearest {fmt.name} to the printed decimals, so bit-level "
        f"results compare the printed decimals, not the original values. For exact values print with {fix}"
    )


def _dtype_name(fmt: Format, is_complex: bool) -> str:
    return f"complex{2 * fmt.width}" if is_complex else fmt.name
