#!/usr/bin/env node
'use strict';
// Builds the addon from source in release mode:
//   libtensorflow into deps/ (scripts/libtensorflow.js), then
//   napi build --platform --release --js binding.js --dts binding.d.ts
// With `--target aarch64-unknown-linux-gnu` on an x64 machine it cross-builds the arm64
// addon (tfjs-node-rs.linux-arm64-gnu.node) instead: linked by Debian's aarch64 gcc against
// the arm64 wheel's libraries, unpacked into their shared copy in the cache (deps/ stays
// this machine's).
// The generated loader goes to binding.js and its types to binding.d.ts, so the
// hand-written index.js / index.d.ts are never overwritten.
// Extra command-line arguments are passed on to `napi build` (e.g. --verbose).

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {
  ensureLibtensorflow, provideShared, platformOfTarget, hostPlatform, SETUP_ERROR_CODE, setupError, log: defaultLog,
} = require('./libtensorflow');

const DEFAULT_ROOT = path.resolve(__dirname, '..');

// A development checkout holds the Rust sources; an installed package does not.
function isDevCheckout(root = DEFAULT_ROOT) {
  return fs.existsSync(path.join(root, 'Cargo.toml')) && fs.existsSync(path.join(root, 'src'));
}

function napiCli(root = DEFAULT_ROOT) {
  const bin = path.join(root, 'node_modules', '.bin', 'napi');
  return fs.existsSync(bin) ? bin : null;
}

// The environment for cargo: cargo on PATH (rustup installs it in ~/.cargo/bin,
// which non-login shells may lack) and pkg-config pointed at deps/; for a cross build
// (`cross`: {target, shared}), also the target's linker and pkg-config pointed at the
// target's shared copy (tensorflow-sys finds libtensorflow through pkg-config, and
// would try to download or build TensorFlow without it).
function buildEnv(root, env, cross) {
  const out = {...env};
  const pathDirs = (out.PATH || '').split(path.delimiter).filter(Boolean);
  const onPath = (dir) => fs.existsSync(path.join(dir, 'cargo'));
  if (!pathDirs.some(onPath)) {
    const home = out.CARGO_HOME || path.join(out.HOME || os.homedir(), '.cargo');
    const bin = path.join(home, 'bin');
    if (onPath(bin)) out.PATH = [bin, ...pathDirs].join(path.delimiter);
  }
  const pc = path.join(root, 'deps', 'lib', 'pkgconfig');
  out.PKG_CONFIG_PATH = [pc, ...(env.PKG_CONFIG_PATH || '').split(path.delimiter).filter(Boolean)]
    .join(path.delimiter);
  if (cross) {
    const triple = cross.target.replace(/-/g, '_');
    const linker = `CARGO_TARGET_${triple.toUpperCase()}_LINKER`;
    if (!out[linker]) out[linker] = `${cross.target.split('-')[0]}-linux-gnu-gcc`;
    out[`PKG_CONFIG_PATH_${triple}`] = path.join(cross.shared, 'lib', 'pkgconfig');
    out[`PKG_CONFIG_ALLOW_CROSS_${triple}`] = '1';
  }
  return out;
}

function checkCargo(env) {
  const res = spawnSync('cargo', ['--version'], {env, encoding: 'utf8'});
  if (res.error || res.status !== 0) {
    throw setupError(
      'cargo (the Rust toolchain) was not found: building tfjs-node-rs from source needs Rust ' +
        '(install it with rustup, https://rustup.rs, then run `npm install` again). ' +
        'Installs of the published package use prebuilt binaries and do not need it; ' +
        'set TFJS_NODE_RS_SKIP_BUILD=1 to skip the build.',
    );
  }
}

// The platform key of Rust target `target` when it is not this machine's (a cross build);
// null for a native build.
function crossPlatform(target) {
  if (!target) return null;
  const key = platformOfTarget(target);
  if (!key) throw setupError(`cannot build for ${target}: tfjs-node-rs has no libtensorflow for that target`);
  return key === hostPlatform() ? null : key;
}

/**
 * Provides libtensorflow, then runs `napi build` in release mode, for this machine or
 * for `target` (a Rust target triple of another supported platform).
 * Returns the exit status of napi build (0 on success). Throws setup errors
 * (code 'TFJS_NODE_RS_SETUP') for a missing toolchain or libtensorflow.
 */
async function build({root = DEFAULT_ROOT, log = defaultLog, env = process.env, args = [], target} = {}) {
  root = path.resolve(root);
  const crossKey = crossPlatform(target);
  const napi = napiCli(root);
  if (!napi) {
    throw setupError(
      `the napi CLI (${path.join(root, 'node_modules', '.bin', 'napi')}) is missing: run \`npm install\` ` +
        '(with dev dependencies) first.',
    );
  }
  checkCargo(buildEnv(root, env));
  // deps/ serves the tests and the native build, and cargo's pkg-config step reads it.
  await ensureLibtensorflow({root, log, env});
  // The target's libtensorflow, in its shared copy.
  const cross = crossKey && {target, shared: await provideShared({key: crossKey, env, log})};
  const childEnv = buildEnv(root, env, cross);
  const napiArgs = [
    'build', '--platform', '--release',
    '--js', 'binding.js', '--dts', 'binding.d.ts',
    ...(cross ? ['--target', target] : []),
    ...args,
  ];
  log(`napi ${napiArgs.join(' ')}`);
  // Run the CLI's JS with this node, not through its #!/usr/bin/env shebang.
  const res = spawnSync(process.execPath, [fs.realpathSync(napi), ...napiArgs], {
    cwd: root,
    env: childEnv,
    stdio: 'inherit',
  });
  if (res.error) throw res.error;
  if (res.status !== 0) {
    log(`napi build failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`})`);
    return res.status || 1;
  }
  return 0;
}

function reportError(err) {
  if (err && err.code === SETUP_ERROR_CODE) process.stderr.write(`tfjs-node-rs: ${err.message}\n`);
  else process.stderr.write(`tfjs-node-rs: ${(err && err.stack) || err}\n`);
}

async function main() {
  try {
    const args = process.argv.slice(2);
    const at = args.indexOf('--target');
    const target = at >= 0 ? args.splice(at, 2)[1] : undefined;
    process.exitCode = await build({args, target});
  } catch (err) {
    reportError(err);
    process.exitCode = 1;
  }
}

// The newest modification time among the files the addon is built from.
function newestSourceMtime(root = DEFAULT_ROOT) {
  let newest = 0;
  const visit = (p) => {
    let st;
    try {
      st = fs.statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const n of fs.readdirSync(p)) visit(path.join(p, n));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of ['src', 'build.rs', 'Cargo.toml', 'Cargo.lock', path.join('.cargo', 'config.toml')]) {
    visit(path.join(root, p));
  }
  return newest;
}

// Runs a script's async main: its result is the exit code; an error is reported in one line.
function runMain(main) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      reportError(err);
      process.exitCode = 1;
    },
  );
}

module.exports = {build, buildEnv, isDevCheckout, napiCli, newestSourceMtime, reportError, runMain};

if (require.main === module) main();
