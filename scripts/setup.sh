#!/usr/bin/env bash
# Installs what plumb needs on Debian 12 (apt-get), then configures and builds it in ./build.
# Idempotent: installs only missing packages and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ git pkg-config
  libtorch-dev            # the execution engine (LibTorch 1.13, CPU)
  libopenblas0-pthread    # without it LibTorch falls back to reference BLAS (~25x slower GEMM)
  libdnnl-dev             # oneDNN: reduced-precision kernels
  libsqlite3-dev libsqlitecpp-dev  # results store
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libyaml-cpp-dev         # sweep specs in YAML
  libboost-dev            # Boost.Math (Student-t quantiles)
  googletest libgtest-dev libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
