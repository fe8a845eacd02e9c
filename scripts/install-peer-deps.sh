#!/usr/bin/env bash
# Installs what the peer engines of strata-bench need to build: clang and
# libclang (bindgen for librocksdb-sys). Idempotent and non-interactive.
#
#   bash scripts/install-peer-deps.sh && \
#     cargo run --release -p strata-bench --features peers -- \
#       suite --suite kv --engines strata,rocksdb,fjall
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
if command -v clang >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q 'libclang'; then
  echo "clang and libclang already installed"
  exit 0
fi
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends clang libclang-dev
