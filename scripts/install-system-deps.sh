#!/usr/bin/env bash
# Debian packages the application and its tests need: Qt's runtime libraries for the offscreen
# and xcb platforms, fonts (without them Qt silently draws empty boxes), and poppler-utils to
# check PDF reports. Installs only what is missing; does nothing when all are present.
# The packaging test (tests/packaging/test_dist.py) also needs: every package the .deb depends
# on (packaging/build.py DEB_DEPENDS, so that `dpkg -i` can be tried), binutils (strip), Xvfb
# and xauth (the window on a real X server), desktop-file-utils (desktop-file-validate).
set -euo pipefail
packages=(fontconfig fonts-dejavu-core libegl1 libgl1 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3
          libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 poppler-utils
          libstdc++6 libgcc-s1 libx11-6 libx11-xcb1 libxcb1 libxcb-glx0 libxcb-image0 libxcb-randr0
          libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-util1
          libxcb-xfixes0 libxcb-xkb1
          binutils xvfb xauth desktop-file-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "warning: missing Debian packages (${missing[*]}); run as root to install them" >&2
    exit 0
  fi
else
  SUDO=""
fi
echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
