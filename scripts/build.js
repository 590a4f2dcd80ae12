#!/usr/bin/env node
'use strict';
// Builds the addon from source in release mode:
//   libtensorflow into deps/ (scripts/libtensorflow.js), then
//   napi build --platform --release --js binding.js --dts binding.d.ts
// The generated loader goes to binding.js and its types to binding.d.ts, so the
// hand-written index.js / index.d.ts are never overwritten.
// Extra command-line arguments are passed on to `napi build` (e.g. --verbose).

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {ensureLibtensorflow, SETUP_ERROR_CODE, setupError, log: defaultLog} = require('./libtensorflow');

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
// which non-login shells may lack) and pkg-config pointed at deps/.
function buildEnv(root, env) {
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

/**
 * Provides libtensorflow, then runs `napi build` in release mode.
 * Returns the exit status of napi build (0 on success). Throws setup errors
 * (code 'TFJS_NODE_RS_SETUP') for a missing toolchain or libtensorflow.
 */
async function build({root = DEFAULT_ROOT, log = defaultLog, env = process.env, args = []} = {}) {
  root = path.resolve(root);
  const napi = napiCli(root);
  if (!napi) {
    throw setupError(
      `the napi CLI (${path.join(root, 'node_modules', '.bin', 'napi')}) is missing: run \`npm install\` ` +
        '(with dev dependencies) first.',
    );
  }
  const childEnv = buildEnv(root, env);
  checkCargo(childEnv);
  await ensureLibtensorflow({root, log, env});
  const napiArgs = [
    'build', '--platform', '--release',
    '--js', 'binding.js', '--dts', 'binding.d.ts',
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
    process.exitCode = await build({args: process.argv.slice(2)});
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
