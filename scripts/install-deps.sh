#!/usr/bin/env bash
# Installs everything shardloader needs to build, test and run its demo:
# Debian's -dev packages for the C++ engine and PyPI packages for Python.
# Idempotent and quick when everything is already there. Used by `make`.
set -euo pipefail

PYTHON=${PYTHON:-python3}
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev libtbb-dev libzstd-dev libcurl4-openssl-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev nlohmann-json3-dev
  tar nginx openssl clang-format
  # make fuzz / make test-fuzz-corpus: libFuzzer and the sanitizers runtimes.
  clang libclang-rt-14-dev
)

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# torch first and pinned: an unpinned torch would pull the CUDA build.
$PYTHON -c "import torch" 2>/dev/null || $PYTHON -m pip install -q "torch==2.13.0"
$PYTHON -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "pybind11>=2.12" "numpy>=1.24" "tqdm>=4.60" \
  "pytest>=7" "webdataset>=0.2" "pillow>=9" "scikit-learn>=1.2"
# The remote-shard tests' S3-compatible server (moto brings boto3; no torch).
$PYTHON -m pip install -q --disable-pip-version-check "moto[server]>=5"
