# scripts/lib/setup.sh — bootstrap + configure + build, shared by scripts/test and
# scripts/demo.  Source it (bash); it defines functions and a few variables, and
# changes no shell options of its caller.
#
#   tessera_bootstrap                 run scripts/bootstrap, export HDF5_PREFIX,
#                                     H5PY_WHEEL_VENV (the stock-h5py-wheel venv) and
#                                     NETCDF_DIR (netCDF-C and its test programs)
#   tessera_configure BUILD [ARGS..]  cmake -G Ninja (skipped if BUILD is already
#                                     configured with the same arguments)
#   tessera_build BUILD               ninja -C BUILD
#   tessera_env_eval BUILD            eval the connector environment for BUILD
#
# Each returns non-zero on failure and never exits the calling shell.

TESSERA_ROOT="${TESSERA_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
TESSERA_VENV="$TESSERA_ROOT/.venv"

tessera_say() { printf '[%s] %s\n' "${TESSERA_TAG:-tessera}" "$*" >&2; }

# Runs scripts/bootstrap.  Its stderr (progress, "reused: ..." lines) goes straight to
# the terminal; its last stdout line is `HDF5_PREFIX=<dir>`.
tessera_bootstrap() {
  local out rc=0 line prefix=""
  out="$(mktemp "${TMPDIR:-/tmp}/tessera-bootstrap.XXXXXX")"
  "$TESSERA_ROOT/scripts/bootstrap" >"$out" || rc=$?
  # Anything else bootstrap printed on stdout is shown, not swallowed.
  while IFS= read -r line; do
    case "$line" in
      HDF5_PREFIX=*) prefix="${line#HDF5_PREFIX=}" ;;
      H5PY_WHEEL_VENV=*) export H5PY_WHEEL_VENV="${line#H5PY_WHEEL_VENV=}" ;;
      NETCDF_DIR=*) export NETCDF_DIR="${line#NETCDF_DIR=}" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done <"$out"
  rm -f "$out"
  if [ "$rc" -ne 0 ]; then
    tessera_say "scripts/bootstrap failed (exit $rc)"
    return "$rc"
  fi
  if [ -z "$prefix" ] || [ ! -f "$prefix/include/hdf5.h" ]; then
    tessera_say "scripts/bootstrap did not report a usable HDF5_PREFIX (got '$prefix')"
    return 1
  fi
  export HDF5_PREFIX="$prefix"
  tessera_say "HDF5_PREFIX=$HDF5_PREFIX"
}

# tessera_configure BUILD_DIR [extra cmake -D args...]
tessera_configure() {
  local build="$1"; shift
  # The same defaults for every caller (scripts/test, scripts/demo), so that they reuse
  # each other's build directory; later -D arguments override earlier ones.
  # TESSERA_KILL_POINTS: the build the tests run has the crash tests' kill points.
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_WERROR=ON -DTESSERA_SANITIZE=OFF
              -DTESSERA_KILL_POINTS=ON
              "-DTESSERA_HDF5_PREFIX=${HDF5_PREFIX:?run tessera_bootstrap first}" "$@")
  local stamp="$build/.tessera-configure-args" want
  want="$(printf '%s\n' "${args[@]}")"
  if [ -f "$build/build.ninja" ] && [ -f "$build/CMakeCache.txt" ] && [ -f "$stamp" ] &&
     [ "$(cat "$stamp")" = "$want" ]; then
    tessera_say "reused: build directory $build (configured with the same options; ninja re-runs cmake if CMakeLists changed)"
    return 0
  fi
  tessera_say "configuring $build: cmake ${args[*]}"
  mkdir -p "$build"
  rm -f "$stamp"
  cmake -S "$TESSERA_ROOT" -B "$build" "${args[@]}" || return $?
  printf '%s\n' "$want" >"$stamp"
}

tessera_build() {
  local build="$1"
  tessera_say "building: ninja -C $build"
  ninja -C "$build"
}

# Sets the connector environment (HDF5_VOL_CONNECTOR, HDF5_PLUGIN_PATH, LD_LIBRARY_PATH,
# PATH, optional compat LD_PRELOAD) in the calling shell for BUILD_DIR.
tessera_env_eval() {
  local build="$1" envtext
  envtext="$(TESSERA_BUILD_DIR="$build" "$TESSERA_ROOT/scripts/tessera-env")" || return $?
  eval "$envtext"
}
