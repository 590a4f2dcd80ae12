#!/bin/sh
# Prototype: cross-builds the addon for Windows x64 (x86_64-pc-windows-gnu) on Linux and lays
# out a TF folder for it from the tensorflow-cpu win_amd64 wheel. Needs: rustup target
# x86_64-pc-windows-gnu; apt gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64; pip (or
# scripts/pypi.js) for the wheel. Writes $OUT (default target/win-x64):
#   deps/lib/_pywrap_tensorflow_common.dll  TF's C API (from the wheel, 1.06 GB)
#   deps/lib/python311.dll                   the stub it imports (python311_stub.js)
#   tf/lib/libtensorflow.dll.a, tf/lib/pkgconfig/tensorflow.pc   what the link uses
#   libnode/libnode.dll.a                   napi-build's windows-gnu setup wants a libnode; unused:
#                                           napi's dyn-symbols finds N-API in node.exe at load
#   tfjs-node-rs.win32-x64-gnu.node
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/target/win-x64}
CACHE=${CACHE:-$HOME/.cache/tfjs-node-rs}
WHEEL=$CACHE/tensorflow_cpu-2.21.0-cp311-cp311-win_amd64.whl
OBJDUMP=x86_64-w64-mingw32-objdump
DLLTOOL=x86_64-w64-mingw32-dlltool
CC=x86_64-w64-mingw32-gcc
DLL=_pywrap_tensorflow_common.dll

[ -f "$WHEEL" ] || pip download --no-deps --platform win_amd64 --python-version 3.11 \
  --only-binary=:all: tensorflow-cpu==2.21.0 -d "$CACHE"
mkdir -p "$OUT/deps/lib" "$OUT/tf/lib/pkgconfig" "$OUT/libnode" "$OUT/stub"
if [ ! -f "$OUT/deps/lib/$DLL" ]; then
  unzip -q -o -j "$WHEEL" "tensorflow/python/$DLL" -d "$OUT/deps/lib"
fi

# The DLL's import and export tables (objdump -p: 15 M lines, ~10 s).
$OBJDUMP -p "$OUT/deps/lib/$DLL" > "$OUT/stub/dll.txt"
awk '/DLL Name: python311.dll/{f=1;next} /DLL Name:/{f=0} f && NF>=3 && $1 ~ /^[0-9a-f]+$/ && $3 != "" {print $3}' \
  "$OUT/stub/dll.txt" | grep -v '^0*$' | sort -u > "$OUT/stub/python311_imports.txt"
awk '/\[Ordinal\/Name Pointer\] Table/{f=1;next} f && /^\t\[/{print $NF}' "$OUT/stub/dll.txt" \
  | grep -E '^TFE?_' | sort -u > "$OUT/stub/tf_exports.txt"

# python311.dll stub.
node "$ROOT/scripts/windows/python311_stub.js" "$OUT/stub/python311_imports.txt" "$OUT/stub"
$CC -O2 -shared -s -o "$OUT/deps/lib/python311.dll" "$OUT/stub/python311_stub.c" "$OUT/stub/python311.def"

# Import library of the C API (TF_* and TFE_* exports only), found by tensorflow-sys via pkg-config.
{ echo "LIBRARY $DLL"; echo EXPORTS; sed 's/^/  /' "$OUT/stub/tf_exports.txt"; } > "$OUT/tf/lib/tensorflow.def"
$DLLTOOL -m i386:x86-64 -d "$OUT/tf/lib/tensorflow.def" -l "$OUT/tf/lib/libtensorflow.dll.a"
cat > "$OUT/tf/lib/pkgconfig/tensorflow.pc" <<PC
libdir=$OUT/tf/lib
Name: tensorflow
Description: TensorFlow C API ($DLL of the tensorflow-cpu 2.21.0 win_amd64 wheel)
Version: 2.21.0
Libs: -L\${libdir} -ltensorflow
PC

# napi-build (napi's build script) panics on windows-gnu unless LIBNODE_PATH holds a libnode.dll.
{ echo "LIBRARY node.exe"; echo EXPORTS; } > "$OUT/libnode/node.def"
$DLLTOOL -m i386:x86-64 -d "$OUT/libnode/node.def" -l "$OUT/libnode/libnode.dll.a"
: > "$OUT/libnode/libnode.dll"

cd "$ROOT"
LIBNODE_PATH="$OUT/libnode" \
PKG_CONFIG_PATH_x86_64_pc_windows_gnu="$OUT/tf/lib/pkgconfig" \
PKG_CONFIG_ALLOW_CROSS_x86_64_pc_windows_gnu=1 \
  cargo build --release --target x86_64-pc-windows-gnu
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
cp "$TARGET_DIR/x86_64-pc-windows-gnu/release/tfjs_node_rs.dll" "$OUT/tfjs-node-rs.win32-x64-gnu.node"
echo "built $OUT/tfjs-node-rs.win32-x64-gnu.node; TF in $OUT/deps/lib"
