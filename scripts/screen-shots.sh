#!/usr/bin/env bash
# Screenshots of the real window as people see it: the app runs on a virtual X screen (Xvfb) of a
# given size and scale, maximized by itself, and the whole X screen is grabbed (not the widget).
# Writes docs/screenshots/10-laptop-1366x768.png, 11-laptop-1280x800.png, 12-hidpi-150.png,
# 13-dark-1600x1000.png, and the machine-you-own journeys opened from docs/examples:
# 14-own-rtx4090-1366x768.png and 15-own-mac-m3max-1366x768.png.
# Needs xvfb-run (scripts/install-system-deps.sh) and .venv (make test).
# Usage: bash scripts/screen-shots.sh [seconds to wait for the window, default 8] [only this file name]
set -euo pipefail
cd "$(dirname "$0")/.."
wait_s=${1:-8}
only=${2:-}
py=.venv/bin/python
out=docs/screenshots
mkdir -p "$out"
shot() {  # name size scale appearance [scenario file to open]
  local name=$1 size=$2 scale=$3 appearance=$4 scenario=${5:-} home
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  home=$(mktemp -d)
  mkdir -p "$home/config"
  printf '{"appearance": "%s"}\n' "$appearance" > "$home/config/settings.json"
  GPUADVISOR_HOME="$home" QT_SCALE_FACTOR="$scale" OUT="$PWD/$out/$name" WAIT_S="$wait_s" PY="$py" \
    SCENARIO="$scenario" xvfb-run -a -s "-screen 0 ${size}x24" bash -c '
      QT_QPA_PLATFORM=xcb "$PY" -m gpuadvisor $SCENARIO >/dev/null 2>&1 & app=$!
      sleep "$WAIT_S"
      QT_QPA_PLATFORM=xcb QT_SCALE_FACTOR=1 "$PY" -c "
import os, sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(sys.argv[:1])
ok = app.primaryScreen().grabWindow(0).save(os.environ[\"OUT\"])
print((\"saved \" if ok else \"could not save \") + os.environ[\"OUT\"])"
      kill "$app" 2>/dev/null; wait "$app" 2>/dev/null; true'
  rm -rf "$home"
}
shot 10-laptop-1366x768.png 1366x768 1 system
shot 11-laptop-1280x800.png 1280x800 1 system
shot 12-hidpi-150.png 1600x1000 1.5 system
shot 13-dark-1600x1000.png 1600x1000 1 dark
shot 14-own-rtx4090-1366x768.png 1366x768 1 system docs/examples/desktop-rtx4090-qwen3-32b.json
shot 15-own-mac-m3max-1366x768.png 1366x768 1 system docs/examples/mac-m3max-64gb-llama70b.json
