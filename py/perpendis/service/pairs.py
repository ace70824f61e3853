"""Compare and rejudge: the boxes read into a pair (:mod:`perpendis.service.boxes`), kept
in the session and judged (:mod:`perpendis.service.judge`).

Boxes that hold several tensors are compared pair by pair instead
(:func:`perpendis.service.captures.switch_to_bisect`), by the rule of
:func:`perpendis.service.boxes.several`, which the input planner also follows for files it
reads itself (:mod:`perpendis.service.planner`); bisecting is imported then, not before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..inputs.load import tensor_names
from . import boxes
from .fold import Progress
from .judge import judge_kept_pair
from .requests import SIDES, CompareRequest, RejudgeRequest, bisect_keywords
from .session import KeptPair, Session


def compare_boxes(
    session: Session, request: CompareRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    inputs, void = request.inputs, request.void_format
    a_list = boxes.load_a(inputs, payloads, void)
    notes = []
    one_box = None
    if boxes.is_empty(inputs.get("b")) and len(a_list) == 2:
        a, b = a_list
        one_box = "a"
        notes.append("box B was empty and box A held two tensors: the first is A, the second B")
    elif boxes.is_empty(inputs.get("b")) and len(a_list) > 2:
        raise InputError(
            f"box A holds {len(a_list)} tensors ({tensor_names(a_list)}) and box B is empty: put what to compare them "
            "with in box B (an archive or files of the same names), or one tensor in each box",
            side="b",
        )
    else:
        b_list = boxes.load(inputs.get("b"), payloads, "b", void.get("b"))
        if boxes.several(len(a_list), len(b_list)):
            from ..layers.bisect_inputs import arranged
            from . import captures

            a_list, b_list, info = arranged(inputs.get("a"), inputs.get("b"), payloads, None, a_list, b_list)
            return captures.switch_to_bisect(session, a_list, b_list, {**bisect_keywords(request), **info}, progress)
        a, b = boxes.single(a_list, "a"), boxes.single(b_list, "b")
    ref = None
    if not boxes.is_empty(inputs.get("ref")):
        ref = boxes.single(boxes.load(inputs["ref"], payloads, "ref", void.get("ref")), "ref")
    session.pair = KeptPair(a, b, ref, request.options, notes)
    choices = {side: boxes.void_choices(inputs.get(side), payloads) for side in SIDES}
    extras = {"void_choices": {k: v for k, v in choices.items() if v}, "one_box": one_box}
    return {**judge_kept_pair(session, progress, workers, request.text), **extras}


def rejudge(
    session: Session, request: RejudgeRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    session.report()
    session.pair.options = request.options
    return judge_kept_pair(session, progress, workers, request.text)
