#!/usr/bin/env bash
# Installs BUILD_DIR into a temporary prefix and builds a C host against it
# twice, as a third party would: with find_package(lapse) in a C-only CMake
# project, and with `cc $(pkg-config --cflags --libs lapse-core)`. Both run
# one window on the installed CPU plugin (found beside the installed core).
# Then the installed Python package, when the build made one.
# Usage: c_host_out_of_tree.sh BUILD_DIR HOST_DIR CMAKE GENERATOR
set -euo pipefail
build_dir=$1 host=$2 cmake=$3 generator=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/lapse_c_host.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset LAPSE_CONFIG

echo "== install into $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
libdir=$(cd "$prefix" && ls -d lib*/pkgconfig | head -1 | cut -d/ -f1)
test -f "$prefix/include/lapse/host_api.h" || { echo "missing from the install: include/lapse/host_api.h"; exit 1; }

echo "== a C host with find_package(lapse)"
cp -r "$host" "$work/src"
"$cmake" -S "$work/src" -B "$work/cmake-build" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$prefix/$libdir" >"$work/cmake.log" 2>&1 &&
  "$cmake" --build "$work/cmake-build" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
out=$("$work/cmake-build/c_host")
echo "$out"
echo "$out" | grep -q '^cpu: [0-9]* ns (device)$'

echo "== a C host with pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
cc=${CC:-cc}
# shellcheck disable=SC2046  # the flags are words
"$cc" -std=c99 -pedantic -Wall -Wextra -Werror "$host/host.c" -o "$work/pc_host" $(pkg-config --cflags --libs lapse-core)
out=$("$work/pc_host")
echo "$out"
echo "$out" | grep -q '^cpu: [0-9]* ns (device)$'

echo "== LAPSE_CONFIG picks the backend"
printf '[backend]\nplugin = "cpu"\nmode = "inline"\n' >"$work/inline.toml"
LAPSE_CONFIG=$work/inline.toml "$work/pc_host" | grep -q '^cpu: [0-9]* ns (system)$'
if pkgdir=$(ls -d "$prefix"/lib*/python3*/dist-packages 2>/dev/null | head -1) && [ -d "$pkgdir/lapse" ]; then
  echo "== the installed Python package"
  python=${LAPSE_PYTHON:-/usr/bin/python3}
  PYTHONPATH=$pkgdir "$python" -c '
import lapse
with lapse.Runtime().open() as dev:
    with dev.window("w", stream=0, flush=True) as w:
        dev.submit(0, lambda: None)
    iv = w.duration.resolve()
    print(dev.info.plugin, iv.ns >= 0, iv.method, lapse.__file__)
' | tee "$work/py.log"
  grep -q "^cpu True device $pkgdir/lapse/__init__.py$" "$work/py.log"
fi
echo "== C host OK"
