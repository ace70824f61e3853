#!/usr/bin/env bash
# The tests that drive torch (perpendis.capture, check_export, export-and-bisect on fixture and
# corpus models, Model Explorer node data, the numeric suite, the torch.save and distributed
# checkpoint readers, tensors given to assert_same) under other torch releases than
# requirements-dev.txt pins, each in a venv of its own that sees the global site-packages
# (NumPy, onnx, onnxscript, onnxruntime, transformers, pytest) but holds its own torch, so the
# global environment is never changed.
# Run by scripts/test.sh when PERPENDIS_TORCH_MATRIX=1, or alone:
#   PERPENDIS_TORCH_VERSIONS="2.14.1 2.15.0" scripts/torch_matrix.sh
# PERPENDIS_TORCH_INDEX: the index torch is taken from; empty (the default) is pip's own
# configuration, i.e. PyPI, whose Linux wheels are CUDA builds: torch 2.15.0 with its nvidia-*,
# triton and cuda-* dependencies is 2.6 GB to download and 5.3 GB in the venv (measured,
# docs/design-notes.md, "Torch releases"); they import and run on a machine without a GPU.
# Where the CPU wheels' index can be reached, PERPENDIS_TORCH_INDEX=https://download.pytorch.org/whl/cpu
# takes ~200 MB a release instead.
# PERPENDIS_TORCH_VENVS: the folder the venvs are kept in (default $TMPDIR or /tmp); a venv
# that already holds the release is reused as it is, with its corpus exports.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS="${PERPENDIS_TORCH_VERSIONS:-2.15.0}"
INDEX="${PERPENDIS_TORCH_INDEX-}"
VENVS="${PERPENDIS_TORCH_VENVS:-${TMPDIR:-/tmp}}"
TESTS=(tests/test_capture_torch.py tests/test_api_bisect_export.py tests/test_export_bisect.py
       tests/test_corpus_layers.py tests/test_model_explorer.py tests/test_numeric_suite.py
       tests/formats/test_torchsave.py tests/test_checkpoints_distcp.py tests/test_testing.py)

# The release asked for, whatever cap pip's configuration sets on torch (a constraints file):
# the venv is this script's own, and testing another release is its point.
no_constraints="$(mktemp)"
trap 'rm -f "$no_constraints"' EXIT

has_torch() {  # the venv's own torch is release $2
  "$1/bin/python" - "$2" 2>/dev/null <<'PY'
import sys
from pathlib import Path

import torch

ok = torch.__version__.split("+")[0] == sys.argv[1]
sys.exit(0 if ok and Path(torch.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()) else 1)
PY
}

for version in $VERSIONS; do
  venv="$VENVS/perpendis-torch-$version"
  echo "== torch $version in $venv"
  [ -x "$venv/bin/python" ] || python3 -m venv --system-site-packages "$venv"
  if ! has_torch "$venv" "$version"; then
    index=()
    [ -n "$INDEX" ] && index=(--index-url "$INDEX")
    # Its own copy of torch (the global one would satisfy an equal pin), then whatever it needs
    # that the global site lacks or holds too old.
    start=$SECONDS
    if ! PIP_CONSTRAINT="$no_constraints" "$venv/bin/python" -m pip install -q --ignore-installed --no-deps "${index[@]}" "torch==$version" \
        || ! PIP_CONSTRAINT="$no_constraints" "$venv/bin/python" -m pip install -q "${index[@]}" "torch==$version"; then
      echo "torch $version could not be installed${INDEX:+ from $INDEX}" >&2
      exit 1
    fi
    echo "installed in $((SECONDS - start)) s; the venv holds $(du -sh "$venv" | cut -f1)"
  fi
  "$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "from", torch.__file__)'
  # bench/corpus caches its exports and reuses them whichever torch made them: each release
  # exports its own.
  PERPENDIS_CORPUS_CACHE="$venv/corpus-cache" "$venv/bin/python" -m pytest -q -n 2 -m "not browser" "${TESTS[@]}"
done
