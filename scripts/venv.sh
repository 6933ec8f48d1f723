#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Make .venv usable for `make run` (runtime) or `make test` / `make dist` (test): check the Debian
# packages that purpose needs (installing them when run as root), rebuild a .venv that cannot run
# pip (made with --without-pip, or half deleted), and install from pyproject.toml what the purpose
# needs: the runtime dependencies only, or with the test and packaging extras too. Reinstalls when
# pyproject.toml is newer than the last install. The first run downloads the packages from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-runtime}
PYTHON=${PYTHON:-python3}
VENV=.venv
case "$purpose" in
  runtime) spec="." ;;
  test) spec=".[test,packaging]" ;;
  *) echo "usage: $0 runtime|test" >&2; exit 2 ;;
esac

bash scripts/install-system-deps.sh "--$purpose"

if [ -e "$VENV" ] && ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "make: $VENV cannot run pip (made with --without-pip, or damaged): recreating it"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PYTHON" -m venv "$VENV"; then
    rm -rf "$VENV"
    echo "make: '$PYTHON -m venv' failed. On Debian or Ubuntu install python3-venv (as root:" \
         "apt-get install python3-venv), or run 'make' once as root, which installs it." >&2
    exit 1
  fi
fi
stamp="$VENV/.installed-$purpose"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "make: installing ${spec} into $VENV (the first time, this downloads the packages from PyPI)"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e "$spec"
  touch "$stamp"
  # a test install contains the runtime one
  [ "$purpose" = test ] && touch "$VENV/.installed-runtime"
fi
exit 0
