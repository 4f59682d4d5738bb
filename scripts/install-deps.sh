#!/usr/bin/env bash
# Installs every Debian package kiln's build, tests and benchmarks need.
# Idempotent: when everything is present it only checks, and never runs `apt-get update`.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang lld clang-format clang-tidy libclang-rt-14-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libarchive-dev libxxhash-dev
  googletest libgtest-dev libbenchmark-dev
  ccache distcc
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
