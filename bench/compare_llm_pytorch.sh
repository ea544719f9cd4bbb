#!/usr/bin/env bash
# Installs Debian's PyTorch (python3-torch) if missing, builds plumb, and runs the plumb-vs-PyTorch
# GPT-2 generation comparison (prefill and KV-cache decode). Arguments go to
# compare_llm_pytorch.py (--preset, --prompt, --gen, --batch, --threads, --rounds).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch
fi
bash scripts/setup.sh
# Debian's interpreter, which is the one that has python3-torch.
exec /usr/bin/python3 bench/compare_llm_pytorch.py "$@"
