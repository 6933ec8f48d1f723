#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian packages gpuadvisor needs, by purpose:
#   --runtime  what `make run` needs: python3-venv (to create .venv) and, when a display is there,
#              Qt's runtime libraries for the xcb platform and a font (without one Qt silently
#              draws empty boxes).
#   --test     (the default) what `make test`, `make dist` and CI need besides: the offscreen and
#              xcb platforms' libraries, poppler-utils (PDF checks), every package the .deb depends
#              on (its Depends, which dpkg-shlibdeps computes, so that `dpkg -i` can be tried),
#              binutils (strip), patchelf (library search paths) and dpkg-dev (dpkg-shlibdeps) for
#              the build, Xvfb and xauth (the window on a real X server), and the package checkers
#              desktop-file-utils, appstream and lintian.
# As root, installs what is missing; otherwise lists it with the command to install it. Does
# nothing when everything is present, or on a system without dpkg.
set -euo pipefail
purpose=test
case "${1:-}" in
  --runtime) purpose=runtime ;;
  --test|"") purpose=test ;;
  *) echo "usage: $0 [--runtime|--test]" >&2; exit 2 ;;
esac
command -v dpkg-query >/dev/null 2>&1 || exit 0

qt_runtime=(fontconfig fonts-dejavu-core libegl1 libgl1 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3
            libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0
            libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1 libx11-xcb1)
packages=()
# Debian's python3 has no ensurepip (so no `python -m venv` with pip) without python3-venv
if ! "${PYTHON:-python3}" -c "import ensurepip" >/dev/null 2>&1; then packages+=(python3-venv); fi
if [ "$purpose" = runtime ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then packages+=("${qt_runtime[@]}"); fi
else
  packages+=("${qt_runtime[@]}" poppler-utils
             libstdc++6 libgcc-s1 libx11-6 libxcb1 libxcb-glx0 libxcb-render0 libxcb-shm0 libxcb-sync1
             libxcb-util1 libxcb-xfixes0 zlib1g libbz2-1.0 liblzma5 libzstd1 libffi8 libuuid1
             binutils patchelf dpkg-dev xvfb xauth desktop-file-utils appstream lintian)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "warning: missing Debian packages: ${missing[*]}" >&2
  echo "  install them with: sudo apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
