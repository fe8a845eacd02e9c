#!/usr/bin/env bash
# Installs the PostgreSQL clients the `strata serve` tests drive: psql
# (Debian's postgresql-client) and psycopg (pip), and openssl (the TLS
# test makes a certificate with it). Idempotent and
# non-interactive; .ci/run calls it before the tests.
#
#   bash scripts/install-client-deps.sh && STRATA_REQUIRE_CLIENTS=1 scripts/test
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
if command -v psql >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1; then
  echo "psql already installed: $(psql --version); $(openssl version)"
else
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends postgresql-client openssl
fi

PYTHON="${PYTHON:-python3}"
if "$PYTHON" -c 'import psycopg' >/dev/null 2>&1; then
  echo "psycopg already installed: $("$PYTHON" -c 'import psycopg; print(psycopg.__version__)')"
else
  "$PYTHON" -m pip install --quiet 'psycopg[binary]>=3.2'
fi
