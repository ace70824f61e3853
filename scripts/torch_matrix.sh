#!/usr/bin/env bash
# The tests that drive torch (perpendis.capture, check_export, export-and-bisect, Model Explorer
# node data, the numeric suite) under other torch releases than requirements-dev.txt pins,
# each in a venv of its own that sees the global site-packages (NumPy, onnx, onnxruntime,
# pytest) but holds its own torch, so the global environment is never changed.
# Run by scripts/test.sh when PERPENDIS_TORCH_MATRIX=1, or alone:
#   PERPENDIS_TORCH_VERSIONS="2.14.1 2.15.0" scripts/torch_matrix.sh
# PERPENDIS_TORCH_INDEX is the index torch is taken from (default the CPU wheels,
# https://download.pytorch.org/whl/cpu, ~200 MB a release; PyPI's Linux wheels are CUDA builds
# that need several GB of nvidia packages); set it empty to use pip's own configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS="${PERPENDIS_TORCH_VERSIONS:-2.15.0}"
INDEX="${PERPENDIS_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
TESTS=(tests/test_capture_torch.py tests/test_api_bisect_export.py tests/test_export_bisect.py
       tests/test_model_explorer.py tests/test_numeric_suite.py)

for version in $VERSIONS; do
  venv="${TMPDIR:-/tmp}/perpendis-torch-$version"
  echo "== torch $version in $venv"
  [ -x "$venv/bin/python" ] || python3 -m venv --system-site-packages "$venv"
  index=()
  [ -n "$INDEX" ] && index=(--index-url "$INDEX")
  # Its own copy of torch (the global one would satisfy an equal pin), then whatever it needs
  # that the global site lacks or holds too old.
  if ! "$venv/bin/python" -m pip install -q --ignore-installed --no-deps "${index[@]}" "torch==$version" \
      || ! "$venv/bin/python" -m pip install -q "${index[@]}" "torch==$version"; then
    echo "torch $version could not be installed${INDEX:+ from $INDEX}" >&2
    exit 1
  fi
  "$venv/bin/python" - "$version" <<'PY'
import sys
from pathlib import Path

import torch

assert torch.__version__.split("+")[0] == sys.argv[1], torch.__version__
assert Path(torch.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), torch.__file__
print("torch", torch.__version__, "from", Path(torch.__file__).parent)
PY
  "$venv/bin/python" -m pytest -q -n 2 -m "not browser" "${TESTS[@]}"
done
