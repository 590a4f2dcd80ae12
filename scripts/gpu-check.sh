#!/usr/bin/env bash
# The check on a machine with an NVIDIA GPU (a few minutes): installs tfjs-node-rs-gpu there the
# way a user does, then scripts/gpu-check.js: isUsingGpuDevice, a matMul, a conv model's predict
# and a fit step against TF's CPU results, a tensor over JS memory, and the layers suite's
# GPU/CPU times.
#
#   scripts/gpu-check.sh prepare BUNDLE [--packs-only]
#                                          here (a checkout with `npm install` done, network):
#                                          fills BUNDLE with everything the GPU machine needs
#                                          (2.3 GB); --packs-only: the packages and the check
#                                          only (0.6 MB), for a GPU machine that reaches PyPI
#                                          and the npm registry
#   scripts/gpu-check.sh run BUNDLE [--dry-run]
#                                          on the GPU machine: installs from BUNDLE, checks
#
# BUNDLE holds (each part optional for `run`: what is missing comes from the registries, which
# the GPU machine then must reach):
#   packs/     the packed packages (scripts/pack.js): tfjs-node-rs-linux-x64-gnu, tfjs-node-rs-gpu
#              (0.6 MB);
#   cache/     the wheels the install takes from ~/.cache/tfjs-node-rs: tensorflow 2.21.0 (CUDA
#              build, 546 MB) and the 8 nvidia-*-cu12 wheels (1456 MB);
#   npm-cache/ npm's cache with @tensorflow/tfjs 4.22 and its dependencies (for `npm --offline`);
#   node/      a Node.js for linux-x64 with npm, when this machine has one cached;
#   check/     scripts/gpu-check.js and the layers suite it times (benches/).
# The GPU machine needs: Linux x64, glibc >= 2.27, an NVIDIA driver >= 525.60.13 (CUDA 12.5's
# minimum; >= 555.42.06 for CUDA 12.5 without minor-version compatibility), libz.so.1 (cuDNN),
# ~4 GB of disk for the install (2.2 GB of CUDA libraries and 1 GB of libtensorflow unpacked,
# in $GPU_CHECK_WORK, default a new folder in $TMPDIR or /tmp; BUNDLE itself may be read-only),
# and Node.js >= 20 with npm unless BUNDLE/node has one.
# `--dry-run` runs the checks on a machine without a GPU (CPU against CPU), to try the script.
set -euo pipefail

usage() {
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

[ $# -ge 2 ] || usage
mode=$1
bundle=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2

if [ "$mode" = prepare ]; then
  repo=$(cd "$(dirname "$0")/.." && pwd)
  cd "$repo"
  mkdir -p "$bundle/packs" "$bundle/cache/tfjs-node-rs" "$bundle/check/scripts" "$bundle/check/benches"
  node scripts/pack.js --build --out "$bundle/packs" --target x86_64-unknown-linux-gnu >/dev/null
  rm -f "$bundle/packs/tfjs-node-rs-0.1.0.tgz" # the CPU root package is not needed there
  cp scripts/gpu-check.js "$bundle/check/scripts/"
  cp benches/models.js benches/worker.js benches/micro.js benches/core_floor.js "$bundle/check/benches/"
  cp "$0" "$bundle/gpu-check.sh"
  if [ "${1:-}" = --packs-only ]; then
    rmdir "$bundle/cache/tfjs-node-rs" "$bundle/cache"
    echo "prepared $bundle (packages and check only: the GPU machine fetches the rest from the registries)"
    exit 0
  fi
  # The wheels, downloaded into this machine's cache first where missing (and unpacked there).
  TFJS_NODE_RS_CUDA=1 node -e "
    const setup = require('./scripts/libtensorflow');
    (async () => {
      await setup.provideShared({key: 'linux-x64-gpu'});
      await setup.provideSharedCuda();
    })().catch((err) => { console.error(err.message); process.exit(1); });"
  cache=$(node -e "console.log(require('./scripts/libtensorflow').cacheDir())")
  cp "$cache"/tensorflow-2.21.0-*-manylinux_2_27_x86_64.whl "$cache"/nvidia_*_cu12-*.whl "$bundle/cache/tfjs-node-rs/"
  # npm's cache, filled by an install without scripts (nothing is unpacked here).
  scratch=$(mktemp -d)
  (cd "$scratch" && echo '{"name":"fill","version":"0.0.0","private":true,"overrides":{"tfjs-node-rs-linux-x64-gnu":"$tfjs-node-rs-linux-x64-gnu"}}' > package.json &&
    npm install --ignore-scripts --no-audit --no-fund --cache "$bundle/npm-cache" "$bundle"/packs/*.tgz >/dev/null)
  rm -rf "$scratch"
  node_dist=$(ls -d "$cache"/node/*-linux-x64 2>/dev/null | head -1 || true)
  if [ -n "$node_dist" ] && [ -x "$node_dist/bin/node" ]; then
    rm -rf "$bundle/node" && cp -a "$node_dist" "$bundle/node"
  fi
  du -sh "$bundle"/* | sed 's/^/  /'
  echo "prepared $bundle: copy it to the GPU machine and run $bundle/gpu-check.sh run $bundle"
  exit 0
fi

[ "$mode" = run ] || usage
if [ -x "$bundle/node/bin/node" ]; then export PATH="$bundle/node/bin:$PATH"; fi
command -v node >/dev/null || { echo "gpu-check: no node on PATH and none in $bundle/node" >&2; exit 1; }
echo "gpu-check: node $(node --version), $(uname -m), $(ldd --version 2>&1 | head -1)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu-check: GPU /'
else
  echo "gpu-check: no nvidia-smi on PATH; /proc/driver/nvidia/version: $(head -1 /proc/driver/nvidia/version 2>/dev/null || echo absent)"
fi

work=${GPU_CHECK_WORK:-$(mktemp -d)}
rm -rf "$work" && mkdir -p "$work/project" "$work/cache/tfjs-node-rs"
echo "gpu-check: installing in $work"
# The cached wheels, linked into a cache of this run's own (the install unpacks there).
for wheel in "$bundle"/cache/tfjs-node-rs/*.whl; do
  [ -e "$wheel" ] && ln -s "$wheel" "$work/cache/tfjs-node-rs/"
done
export XDG_CACHE_HOME=$work/cache
npm_args=(--no-audit --no-fund --foreground-scripts)
if [ -d "$bundle/npm-cache" ]; then npm_args+=(--offline --cache "$bundle/npm-cache"); fi
cd "$work/project"
cat > package.json <<'EOF'
{"name": "gpu-check", "version": "0.0.0", "private": true,
 "allowScripts": {"tfjs-node-rs-gpu": true},
 "overrides": {"tfjs-node-rs-linux-x64-gnu": "$tfjs-node-rs-linux-x64-gnu"}}
EOF
started=$(date +%s)
npm install "${npm_args[@]}" "$bundle"/packs/tfjs-node-rs-linux-x64-gnu-*.tgz "$bundle"/packs/tfjs-node-rs-gpu-*.tgz 2>&1 |
  grep -E 'tfjs-node-rs|added|ERR' || true
echo "gpu-check: installed in $(( $(date +%s) - started )) s"
cp -r "$bundle/check/." "$work/project/"
node scripts/gpu-check.js "$@"
