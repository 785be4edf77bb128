#!/usr/bin/env bash
# Installs every Debian package npuc needs to build, test and make its test models.
# Idempotent: when everything is already installed it only runs dpkg queries (a second or so).
set -euo pipefail

PACKAGES=(
  # toolchain
  cmake ninja-build g++ pkg-config
  # code generation (LLVM 16 ORC JIT, NVPTX); LLVM's CMake package needs zstd
  llvm-16-dev llvm-16-tools libzstd-dev
  # compiler reasoning, RTL (make: verilator --build; yosys: the rtl synthesis check), target
  # description, graph algorithms
  libz3-dev verilator make yosys libyaml-cpp-dev libboost-graph-dev
  # ONNX import
  libonnx-dev libprotobuf-dev protobuf-compiler
  # CLI, formatting, JSON, tests
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  # the auto-tuner (npuc tune): XGBoost for its learned cost model (tune/costmodel, C API), gnuplot
  # for its plots of best cycles against trials (support/Plot.cpp runs the program)
  libxgboost-dev gnuplot-nox
  # design-space exploration (npuc explore): OpenMPI for sweeps on many ranks (explore/Mpi.h);
  # pybind11 for the Python module (python/)
  libopenmpi-dev openmpi-bin pybind11-dev python3-dev
  # the sanitizer build and the libFuzzer harnesses (scripts/sanitize.sh, fuzz/): clang 16 with
  # its sanitizer and libFuzzer runtimes (llvm-16's llvm-symbolizer names the source lines), and
  # its linker, lld (CMakeLists.txt: faster links; gcc builds link with binutils' gold)
  clang-16 libclang-rt-16-dev libfuzzer-16-dev lld-16
  # test models (export with /usr/bin/python3)
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  # ONNX's own backend tests (node, pytorch-converted, pytorch-operator, simple), run by the
  # `conformance` label (tests/conformance/)
  libonnx-testdata
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
