#!/usr/bin/env bash
# Installs Debian's PyTorch (python3-torch, python3-torchvision) if missing, builds plumb, and
# runs the plumb-vs-PyTorch throughput comparison. Arguments go to compare_pytorch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in python3-torch python3-torchvision; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch python3-torchvision
    break
  fi
done
bash scripts/setup.sh
# Debian's interpreter, which is the one that has python3-torch.
exec /usr/bin/python3 bench/compare_pytorch.py "$@"
