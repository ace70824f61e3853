"""ComparisonOptions: what the user asked, typed and checked once for every front end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from perpendis import assert_same
from perpendis import compare as compare_values
from perpendis.engine.compare import compare
from perpendis.engine.options import FIELDS, ComparisonOptions
from perpendis.engine.task import TaskSpec
from perpendis.errors import InputError
from perpendis.inputs.tensor import from_numpy
from perpendis.numerics.bits import FORMATS


def test_defaults_let_the_format_choose_and_are_frozen():
    options = ComparisonOptions()
    assert (options.preset, options.atol, options.rtol, options.depth) == (None, None, None, 1.0)
    assert options.check_dtype is True and options.task is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.atol = 1.0  # type: ignore[misc]
    assert ComparisonOptions(preset="") == options  # the page's "no preset chosen"


def test_the_task_is_held_in_its_typed_form():
    assert ComparisonOptions(task="logits").task == TaskSpec(kind="logits")
    assert ComparisonOptions(task={"axis": 1, "k": 3}).task == TaskSpec(1, 3)
    assert ComparisonOptions(task=False).task is None
    assert ComparisonOptions(task="logits").without_task() == ComparisonOptions()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"preset": "numpyy"}, "unknown tolerance preset 'numpyy'; choose one of: "),
        ({"atol": -1.0}, "atol must be a finite number >= 0, got -1.0"),
        ({"rtol": float("nan")}, "rtol must be a finite number >= 0, got nan"),
        ({"atol": "1e-3"}, "atol must be a finite number >= 0, got '1e-3'"),
        ({"atol": True}, "atol must be a finite number >= 0, got True"),
        ({"depth": 0}, "depth must be a number > 0"),
        ({"depth": True}, "depth must be a number > 0"),
        ({"check_dtype": "no"}, "check_dtype must be true or false, got 'no'"),
        ({"task": {"axis": -1, "kk": 3}}, "task takes the keys axis, k and kind"),
    ],
)
def test_bad_values_are_refused_when_made(given, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ComparisonOptions(**given)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ComparisonOptions.of(given)


def test_of_reads_a_mapping_and_refuses_keys_it_does_not_know():
    assert ComparisonOptions.of({"atol": 1e-3, "depth": 2, "preset": None}) == ComparisonOptions(atol=1e-3, depth=2.0)
    assert ComparisonOptions.of(None) == ComparisonOptions()
    with pytest.raises(InputError) as refused:
        ComparisonOptions.of({"atoll": 1e-3})
    assert "unknown option 'atoll'" in refused.value.message
    assert all(name in refused.value.message for name in FIELDS)
    assert ComparisonOptions.of({"atol": 1.0, "rename": []}, ("rename",)).atol == 1.0
    with pytest.raises(InputError, match="options must be a mapping"):
        ComparisonOptions.of(["atol"])  # type: ignore[arg-type]


def test_the_tolerance_is_resolved_per_format_with_the_overrides():
    options = ComparisonOptions(preset="numpy-default", rtol=0.5)
    tol = options.tolerance(FORMATS["float16"])
    assert (tol.preset, tol.rtol) == ("numpy-default", 0.5) and tol.atol == 0.0 and tol.warning
    default16, default32 = (ComparisonOptions().tolerance(FORMATS[f]) for f in ("float16", "float32"))
    assert default16.rtol > default32.rtol  # the format chooses when nothing is asked


def test_to_dict_is_json_ready_and_round_trips():
    options = ComparisonOptions(preset="numpy-default", atol=0.1, depth=3, check_dtype=False, task={"axis": 0, "k": 2})
    back = ComparisonOptions.of(options.to_dict())
    assert back == options


def test_every_front_end_judges_alike_with_the_same_options():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 10)).astype(np.float32)
    b = (a + rng.standard_normal(a.shape).astype(np.float32) * 1e-3).astype(np.float32)
    options = ComparisonOptions(atol=1e-2, rtol=0.0, depth=2.0)
    engine = compare(from_numpy(a, "A"), from_numpy(b, "B"), options)
    public = compare_values(a, b, atol=1e-2, rtol=0.0, depth=2.0)
    assert engine.to_dict() == public.to_dict() and engine.tolerance.atol == 1e-2
    assert assert_same(a, b, atol=1e-2, rtol=0.0, depth=2.0).verdict == public.verdict
    with pytest.raises(InputError, match="atol must be a finite number >= 0"):
        assert_same(a, b, atol=-1.0)
