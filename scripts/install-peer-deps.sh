#!/usr/bin/env bash
# Installs what the peers of strata-bench need: clang and libclang (bindgen
# for librocksdb-sys, the kv suite's RocksDB) and DuckDB's Python package
# (the htap suite runs DuckDB through scripts/htap_duckdb.py). SQLite needs
# nothing: rusqlite bundles it. Idempotent and non-interactive.
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
else
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends clang libclang-dev
fi

PYTHON="${PYTHON:-python3}"
if "$PYTHON" -c 'import duckdb' >/dev/null 2>&1; then
  echo "duckdb (Python) already installed: $("$PYTHON" -c 'import duckdb; print(duckdb.__version__)')"
else
  "$PYTHON" -m pip install --quiet 'duckdb>=1.1'
fi
