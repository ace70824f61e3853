"""How often each peer preset agrees with the peer it mimics, over generated pairs.

For every preset and dtype, ``--pairs`` pairs (default 10,000) come from
``tests/peers.py``'s generator (specials, subnormals, huge and tiny magnitudes, shapes
from 0-d to empty); each is judged by Perpendis and by the real peer, and this prints how
many verdicts (pass/fail), failing counts and worst failing |A - B| agree.  A count or a
worst is only compared where the peer states one.  Each pair where any of them differs is
classified (``peers.disagreement``): by the documented departure of docs/presets.md that
explains it, checked on the pair, or as unexplained.  Run on any revision: a preset that
revision lacks is judged with the peer's atol and rtol as a custom tolerance, so the
"before" of a new preset is what a user could have set by hand.

    python3 bench/peer_agreement.py [--pairs N] [--seed S] [--presets a,b] [--dtypes x,y] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
if "--code" not in sys.argv:
    sys.path.insert(0, str(ROOT / "py"))
else:  # the core of another revision (e.g. main's, unpacked elsewhere)
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])

import peers  # noqa: E402
from perpendis.numerics import tolerance  # noqa: E402

# The peer each preset mimics, and the (atol, rtol) a user would type for it by hand.
PEERS = {
    "torch-default": None,
    "numpy-default": (0.0, 1e-7),
    "numpy-allclose": (1e-8, 1e-5),
    "polygraphy": (1e-5, 1e-5),
    "dynamo": (1e-4, 1e-4),
}
# numpy and Polygraphy take NumPy arrays: no bfloat16.
# dynamo's RMSE rule takes real tensors only.
NOT_FOR = {
    "numpy-default": {"bfloat16"},
    "numpy-allclose": {"bfloat16"},
    "polygraphy": {"bfloat16", "complex64", "complex128"},
    "dynamo": {"complex64", "complex128"},
}


def peer_says(preset: str, a: np.ndarray, b: np.ndarray, dtype: str, ref: np.ndarray) -> peers.Said:
    if preset == "torch-default":
        return peers.torch_assert_close(a, b, dtype)
    if preset == "numpy-default":
        return peers.numpy_assert_allclose(a, b)
    if preset == "numpy-allclose":
        return peers.numpy_allclose(a, b)
    if preset == "polygraphy":
        return peers.polygraphy_simple(a, b)
    return peers.dynamo_same(a, b, dtype, ref)


def perpendis_says(preset: str, a: np.ndarray, b: np.ndarray, dtype: str, ref: np.ndarray) -> peers.Said:
    """The tolerance verdict of the report; a preset this revision lacks is typed by hand."""
    kwargs: dict[str, object] = {"preset": preset}
    if preset not in tolerance.PRESETS:
        atol, rtol = PEERS[preset]  # type: ignore[misc]
        kwargs = {"preset": None, "atol": atol, "rtol": rtol}
    return peers.perpendis_says(a, b, dtype, ref64=ref if preset == "dynamo" else None, fast=True, **kwargs)


def run(presets: list[str], dtypes: list[str], n_pairs: int, seed: int) -> list[dict[str, object]]:
    rows = []
    for dtype in dtypes:
        rng = np.random.default_rng([seed, peers.DTYPES.index(dtype)])
        pairs = [peers.pair(rng, dtype) for _ in range(n_pairs)]
        for preset in presets:
            if dtype in NOT_FOR.get(preset, ()):
                continue
            start = time.perf_counter()
            verdicts = counts = counted = worsts = worsted = 0
            disagree: list[int] = []
            explained: dict[str, int] = {}
            unexplained: list[int] = []
            for i, (a, b, ref) in enumerate(pairs):
                theirs = peer_says(preset, a, b, dtype, ref)
                ours = perpendis_says(preset, a, b, dtype, ref)
                verdicts += ours.passed == theirs.passed
                if ours.passed != theirs.passed and len(disagree) < 5:
                    disagree.append(i)
                why = peers.disagreement(preset, dtype, a, b, ref if preset == "dynamo" else None, ours, theirs)
                if why == "unexplained":
                    unexplained.append(i)
                elif why is not None:
                    explained[why] = explained.get(why, 0) + 1
                if theirs.n_fail is not None:
                    counted += 1
                    counts += ours.n_fail == theirs.n_fail
                if theirs.worst is not None:
                    worsted += 1
                    worsts += peers.same_worst(ours, theirs, preset, dtype)
            rows.append(
                {
                    "preset": preset,
                    "dtype": dtype,
                    "pairs": n_pairs,
                    "verdict_agree": verdicts,
                    "count_agree": counts,
                    "counted": counted,
                    "worst_agree": worsts,
                    "worsted": worsted,
                    "first_disagreements": disagree,
                    "explained": explained,  # disagreeing pairs by the documented departure that explains them
                    "unexplained": len(unexplained),
                    "first_unexplained": unexplained[:5],
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            r = rows[-1]
            print(
                f"{preset:15} {dtype:10} verdicts {verdicts}/{n_pairs} ({verdicts / n_pairs:.2%})  "
                f"counts {counts}/{counted}  worst {worsts}/{worsted}  [{r['seconds']} s]",
                flush=True,
            )
            if explained or unexplained:
                named = ", ".join(f"{k} {v}" for k, v in sorted(explained.items())) or "none"
                first = f" (first: pairs {unexplained[:5]})" if unexplained else ""
                print(f"{'':26} disagreements explained: {named}; unexplained: {len(unexplained)}{first}", flush=True)
    return rows


def main() -> None:
    import logging
    import warnings

    warnings.simplefilter("ignore")  # generated specials overflow and divide by zero, on purpose
    np.seterr(all="ignore")
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)  # "Found nan in reference", per pair
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--presets", default=",".join(PEERS))
    parser.add_argument("--dtypes", default=",".join(peers.DTYPES))
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--code", help="the py/ folder of the core to measure (default: this checkout's)")
    args = parser.parse_args()
    rows = run(args.presets.split(","), args.dtypes.split(","), args.pairs, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
