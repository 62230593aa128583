#!/usr/bin/env bash
# Builds consumer.c as HDF5 users build programs against the bootstrap's HDF5 prefix —
# CMake's find_package(HDF5) in config mode and in module mode (FindHDF5, which finds
# HDF5's package), h5hlcc, and pkg-config — and runs each build
# natively and on tessera, selected only by HDF5_VOL_CONNECTOR (no preload).  The tessera
# run must print what the native run prints, but for the connector line (issue 45).
# Usage: run_consumer.sh HDF5_PREFIX PLUGIN_DIR WORK_DIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 HDF5_PREFIX PLUGIN_DIR WORK_DIR" >&2; exit 2; }
PREFIX=$1 PLUGINS=$2 WORK=$3
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$WORK"; mkdir -p "$WORK"
unset HDF5_VOL_CONNECTOR HDF5_PLUGIN_PATH LD_PRELOAD
fail() { echo "FAIL: $*"; exit 1; }

build_cmake() {  # build_cmake NAME CMAKE-ARGS...
  local name=$1; shift
  cmake -S "$SRC" -B "$WORK/$name" -G Ninja "$@" > "$WORK/$name.log" 2>&1 \
    || { tail -25 "$WORK/$name.log"; fail "$name: configuring the consumer project failed"; }
  cmake --build "$WORK/$name" >> "$WORK/$name.log" 2>&1 \
    || { tail -25 "$WORK/$name.log"; fail "$name: building the consumer project failed"; }
  grep -q "consumer: HDF5 1\." "$WORK/$name.log" || fail "$name: no HDF5 version found"
  echo "built $name: $(grep -o 'consumer: HDF5 [^ ]*' "$WORK/$name.log")"
}
build_cmake cmake-config -DCMAKE_PREFIX_PATH="$PREFIX"
build_cmake cmake-module -DCONSUMER_CONFIG_MODE=OFF -DHDF5_ROOT="$PREFIX"

mkdir -p "$WORK/h5hlcc" "$WORK/pkg-config"
"$PREFIX/bin/h5hlcc" "$SRC/consumer.c" -o "$WORK/h5hlcc/consumer" -Wl,-rpath,"$PREFIX/lib" \
  > "$WORK/h5hlcc.log" 2>&1 || { cat "$WORK/h5hlcc.log"; fail "h5hlcc could not build the consumer"; }
echo "built h5hlcc"
# Parallel HDF5's headers include mpi.h: pkg-config users add MPI's own package.
# shellcheck disable=SC2046
cc "$SRC/consumer.c" -o "$WORK/pkg-config/consumer" -Wl,-rpath,"$PREFIX/lib" \
  $(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs hdf5_hl hdf5 ompi-c) \
  > "$WORK/pkg-config.log" 2>&1 || { cat "$WORK/pkg-config.log"; fail "pkg-config flags could not build the consumer"; }
echo "built pkg-config"

reference=""
for name in cmake-config cmake-module h5hlcc pkg-config; do
  exe="$WORK/$name/consumer"
  [ -x "$exe" ] || fail "$name: no program at $exe"
  (cd "$WORK/$name" && ./consumer native.h5 > native.out 2>&1) || { cat "$WORK/$name/native.out"; fail "$name: native run failed"; }
  (cd "$WORK/$name" && HDF5_VOL_CONNECTOR=tessera HDF5_PLUGIN_PATH="$PLUGINS" ./consumer tessera.h5 > tessera.out 2>&1) \
    || { cat "$WORK/$name/tessera.out"; fail "$name: tessera run failed"; }
  [ "$(head -n1 "$WORK/$name/native.out")" = "connector native" ] || fail "$name: native run used $(head -n1 "$WORK/$name/native.out")"
  [ "$(head -n1 "$WORK/$name/tessera.out")" = "connector tessera" ] \
    || fail "$name: HDF5_VOL_CONNECTOR=tessera did not load tessera: $(head -n1 "$WORK/$name/tessera.out")"
  diff <(tail -n +2 "$WORK/$name/native.out") <(tail -n +2 "$WORK/$name/tessera.out") \
    || fail "$name: tessera's output differs from native's"
  [ -z "$reference" ] && reference="$WORK/$name/native.out"
  cmp -s "$reference" "$WORK/$name/native.out" || fail "$name: native output differs from the first build's"
  echo "ran $name: native and tessera agree ($(wc -l < "$WORK/$name/native.out") lines)"
done
echo "consumer: 4 builds, each native = tessera"
