#!/usr/bin/env bash
# Create the reference venv (.venv-ref, git-ignored) holding the published
# implementation `better-actuator-models` (module `bam`) that
# benchmarks/reference_runner.py calls for side-by-side benchmarks.
#
# The reference declares Requires-Python >=3.12,<3.13; it imports and runs on
# 3.11, so it is installed with --ignore-requires-python and --no-deps (its
# runtime needs numpy and colorama; the identification extras optuna, cmaes and
# wandb are installed first so that bam.fit / bam.logs import cleanly).
#
# Idempotent: does nothing when the pinned reference is already importable.
# Usage: bash benchmarks/setup_reference.sh   (env: PYTHON=python3.11, VENV=...)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-ref}"
PYTHON="${PYTHON:-python3.11}"

REF_VERSION="1.0.2"
DEPS=(
  "numpy==2.4.6"
  "optuna==5.0.0"
  "cmaes==0.13.1"
  "colorama==0.4.6"
  "wandb==0.31.0"
)

check() {
  "$VENV/bin/python" - "$REF_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
import bam.simulate, bam.logs, bam.model  # noqa: F401
assert version("better-actuator-models") == sys.argv[1]
EOF
}

if [ -x "$VENV/bin/python" ] && check; then
  echo "reference already installed: better-actuator-models==$REF_VERSION in $VENV"
  exit 0
fi

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "error: $PYTHON not found (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi

"$VENV/bin/pip" install --quiet --disable-pip-version-check "${DEPS[@]}"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  --ignore-requires-python --no-deps "better-actuator-models==$REF_VERSION"

if check; then
  echo "reference installed: better-actuator-models==$REF_VERSION in $VENV"
else
  echo "error: reference install in $VENV failed the import check" >&2
  exit 1
fi
