#!/usr/bin/env bash
# Installs what plumb needs on Debian 12 (apt-get), then configures and builds it in ./build:
# every target, or only those named (bash scripts/setup.sh plumb).
# Idempotent: installs only missing packages and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ git pkg-config
  libtorch-dev            # the execution engine (LibTorch 1.13, CPU)
  libgloo-dev             # c10d's Gloo headers: data-parallel training (plumb dist)
  iproute2                # ip and tc: plumb dist --link shapes a loopback in a namespace
  libopenblas0-openmp     # without it LibTorch falls back to reference BLAS (~25x slower GEMM)
  libdnnl-dev             # oneDNN: reduced-precision kernels
  ocl-icd-opencl-dev      # oneDNN's CMake config requires OpenCL; Debian only recommends it
  libsqlite3-dev libsqlitecpp-dev  # results store
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libyaml-cpp-dev         # sweep specs in YAML
  libboost-dev            # Boost.Math (Student-t quantiles)
  googletest libgtest-dev libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer: the fuzz targets of the test suite (tests/fuzz)
  chromium fonts-dejavu-core  # the report's browser test renders it headless, offline
  libpng-dev              # ... and reads the pixels of its screenshot
)
# npm fetches the chart libraries the report bundles (web/package.json). Debian's nodejs/npm,
# unless a Node.js that already brings npm is installed (e.g. NodeSource's nodejs package,
# which conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# LibTorch runs its own operators on OpenMP threads. OpenBLAS's OpenMP build shares that pool;
# its pthreads build (preferred by Debian's alternatives when both are installed) starts a
# second pool that competes for the cores: 2-thread GEMMs up to ~3x slower on a 2-core VM.
multiarch=$(gcc -print-multiarch)
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  want="/usr/lib/$multiarch/openblas-openmp/$lib"
  if [ "$(update-alternatives --query "$lib-$multiarch" | sed -n 's/^Value: //p')" != "$want" ]; then
    echo "setup: pointing $lib at OpenBLAS's OpenMP build"
    $sudo update-alternatives --set "$lib-$multiarch" "$want"
  fi
done

# The report's JavaScript, pinned by web/package-lock.json; reinstalled only when it changes.
if ! cmp -s web/package-lock.json web/node_modules/.plumb-installed-lock 2>/dev/null; then
  echo "setup: installing the report's chart libraries (npm ci in web/)"
  npm ci --prefix web --no-audit --no-fund --loglevel=error
  cp web/package-lock.json web/node_modules/.plumb-installed-lock
fi

[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
# Targets named on the command line only (the README's main job builds `plumb` alone: the tests,
# benchmarks and fuzz targets are most of the build); everything without arguments.
cmake --build build -j "$(nproc)" ${1+--target "$@"}
