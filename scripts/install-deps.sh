#!/usr/bin/env bash
# Installs every Debian package kiln's build, tests and benchmarks need, and NVIDIA's NVSHMEM
# (headers and device library, from the nvidia-nvshmem-cu13 Python wheel) into .deps/nvshmem in
# this checkout, for the CUDA tests.
# Idempotent: when everything is present it only checks, and never runs `apt-get update`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nvshmem_version=3.8.0
nvshmem_dir="$root/.deps/nvshmem"

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

packages=(
  build-essential cmake ninja-build pkg-config git
  clang lld clang-format clang-tidy libclang-rt-14-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libarchive-dev libxxhash-dev
  googletest libgtest-dev libbenchmark-dev
  ccache distcc
  rocm-device-libs clang-15 lld-15 llvm-15
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # the cross libc (crti.o), not a Recommends only
  emscripten
  python3-venv  # the cuda_tvm_bench target's venv
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
