#!/usr/bin/env node
'use strict';
// `npm run test:install`: installs tfjs-node-rs the way a user does, from the
// packed packages, with no Rust toolchain, and uses it.
//
//   1. packs the root package and the per-platform package (scripts/pack.js;
//      builds the addon first if it is missing or stale);
//   2. for each mode, in a new project in the temp folder, with cargo and rustc
//      removed from PATH (and CARGO_HOME / RUSTUP_HOME pointing nowhere):
//        env:   TFJS_NODE_RS_LIBTENSORFLOW=<repo>/deps/lib (postinstall symlinks)
//        cache: no TFJS_NODE_RS_LIBTENSORFLOW (postinstall extracts the cached
//               tensorflow-cpu wheel, or downloads it with pip: the default path)
//      runs `npm install <platform tgz> <root tgz>`, then checks:
//        - no registry fetch of the platform package, no Rust sources, no build;
//        - deps/ made by postinstall from the expected source;
//        - the addon loads libtensorflow from node_modules/tfjs-node-rs/deps/lib;
//        - a small model trains on the 'tensorflow' backend (tf.getBackend());
//        - env mode only: with deps/ removed, the load error says libtensorflow
//          is missing, and `npm rebuild tfjs-node-rs` fixes it;
//      and one more mode:
//        alias: the root package installed as `@tensorflow/tfjs-node` (what npm's
//               `@tensorflow/tfjs-node@npm:tfjs-node-rs` makes, so that libraries
//               built for tfjs-node use this package), TFJS_NODE_RS_LIBTENSORFLOW
//               set: `require('@tensorflow/tfjs-node')` runs ops on the 'tensorflow'
//               backend and its binding carries tfjs-node's TF_Version;
//   3. prints the timings; removes the temp folder (unless --keep).
//
//   node scripts/test-install.js [--mode all|env|cache|alias] [--keep] [--root DIR]

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { pack, npmCommand } = require('./pack');
const { exists } = require('./libtensorflow');

const ROOT = path.resolve(__dirname, '..');
const PLATFORM_PACKAGE = 'tfjs-node-rs-linux-x64-gnu';
const ADDON_FILE = 'tfjs-node-rs.linux-x64-gnu.node';
const RUST_TOOLS = ['cargo', 'rustc', 'rustup', 'rustdoc'];
// Everything rustup installs beside them (cargo-clippy, rustfmt, clippy-driver, rls, ...).
const RUST_TOOL_RE = /^(cargo|rust|clippy|rls)/;
const ENV_DIR = 'TFJS_NODE_RS_LIBTENSORFLOW';
const MODES = ['env', 'cache', 'alias'];
/** The name libraries made for tfjs-node require. */
const ALIAS = '@tensorflow/tfjs-node';
const MB = 1024 * 1024;
// npm settings from the calling npm that are safe to pass on (network, cache).
const NPM_CONFIG_KEEP = new Set([
  'cache', 'cafile', 'ca', 'userconfig', 'globalconfig', 'registry', 'proxy', 'https_proxy',
  'noproxy', 'strict_ssl', 'fetch_retries', 'fetch_timeout', 'maxsockets',
]);

const timings = [];

function log(message) {
  process.stderr.write(`test:install: ${message}\n`);
}

function fail(message) {
  const err = new Error(message);
  err.code = 'TFJS_NODE_RS_TEST_INSTALL';
  return err;
}

async function timed(label, fn) {
  const started = Date.now();
  log(`${label} ...`);
  try {
    return await fn();
  } finally {
    const s = (Date.now() - started) / 1000;
    timings.push([label, s]);
    log(`${label}: ${s.toFixed(1)} s`);
  }
}

function parseArgs(argv) {
  const opts = { mode: 'all', keep: false, root: ROOT };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [key, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, null];
    const value = () => (inline !== null ? inline : argv[++i]);
    if (key === '--mode') opts.mode = value();
    else if (key === '--keep') opts.keep = true;
    else if (key === '--root') opts.root = path.resolve(value());
    else throw fail(`unknown argument ${a} (usage: node scripts/test-install.js [--mode all|env|cache|alias] [--keep])`);
  }
  if (!['all', ...MODES].includes(opts.mode)) throw fail(`--mode must be all, ${MODES.join(', ')} (got ${opts.mode})`);
  return opts;
}

// ---------------------------------------------------------------------------
// The environment of a user without Rust.

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

// PATH without the Rust tools: folders holding only them are dropped; a folder
// that holds them among other tools (e.g. /usr/bin) is replaced by a folder of
// symlinks to everything else in it.
function pathWithoutRust(pathValue, shadowBase) {
  const out = [];
  let shadows = 0;
  for (const dir of [...new Set((pathValue || '').split(path.delimiter).filter(Boolean))]) {
    // What `npm run` prepends (this checkout's node_modules/.bin, npm's node-gyp shim).
    if (/[\\/]node_modules[\\/]\.bin$/.test(dir) || /[\\/]node-gyp-bin$/.test(dir)) continue;
    const rust = RUST_TOOLS.filter((t) => isExecutable(path.join(dir, t)));
    if (!rust.length) {
      out.push(dir);
      continue;
    }
    let names;
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    const others = names.filter((n) => !RUST_TOOLS.includes(n) && !RUST_TOOL_RE.test(n));
    if (!others.length) continue;
    const shadow = path.join(shadowBase, `path-${shadows++}`);
    fs.mkdirSync(shadow, { recursive: true });
    for (const n of others) fs.symlinkSync(path.join(dir, n), path.join(shadow, n));
    out.push(shadow);
  }
  return out.join(path.delimiter);
}

function cleanEnv(tmp) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k)) {
      const m = /^npm_config_(.+)$/i.exec(k);
      if (m && NPM_CONFIG_KEEP.has(m[1].toLowerCase())) env[k] = v;
      continue;
    }
    if (/^(CARGO|RUSTUP|RUSTC|RUSTDOC|RUSTFLAGS)/.test(k)) continue;
    env[k] = v;
  }
  const nowhere = path.join(tmp, 'no-rust');
  env.CARGO_HOME = nowhere;
  env.RUSTUP_HOME = nowhere;
  env.PATH = pathWithoutRust(process.env.PATH, path.join(tmp, 'bin'));
  delete env[ENV_DIR];
  delete env.LD_LIBRARY_PATH;
  delete env.NAPI_RS_NATIVE_LIBRARY_PATH;
  delete env.TFJS_NODE_RS_SKIP_BUILD;
  env.npm_config_update_notifier = 'false';
  const probe = spawnSync('sh', ['-c', `for t in ${RUST_TOOLS.join(' ')}; do command -v $t; done`], { env, encoding: 'utf8' });
  if ((probe.stdout || '').trim()) throw fail(`could not remove the Rust tools from PATH: ${probe.stdout.trim()}`);
  const node = spawnSync('sh', ['-c', 'command -v node'], { env, encoding: 'utf8' });
  if (!(node.stdout || '').trim()) throw fail('node is not on PATH without the Rust folders');
  return env;
}

// ---------------------------------------------------------------------------

function run(cmd, args, { cwd, env, label, allowFail = false }) {
  const res = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 256 * MB });
  if (res.error) throw res.error;
  const output = `${res.stdout || ''}${res.stderr || ''}`;
  if (res.status !== 0 && !allowFail) {
    throw fail(`${label} failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`}):\n${output.trim().split('\n').slice(-40).join('\n')}`);
  }
  return { status: res.status, stdout: res.stdout || '', stderr: res.stderr || '', output };
}

function npm(args, opts) {
  const { cmd, pre } = npmCommand(opts.env);
  return run(cmd, [...pre, ...args], opts);
}

function nodeScript(project, env, code, label, allowFail = false) {
  return run(process.execPath, ['-e', code], { cwd: project, env, label, allowFail });
}

function findFiles(dir, test, out = []) {
  let items;
  try {
    items = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const it of items) {
    const p = path.join(dir, it.name);
    if (test(p, it)) out.push(p);
    if (it.isDirectory() && !it.isSymbolicLink()) findFiles(p, test, out);
  }
  return out;
}

// A dir holding libtensorflow for the env mode: $TFJS_NODE_RS_LIBTENSORFLOW, or
// the repository's deps/lib.
function envLibDir(root) {
  const candidates = [process.env[ENV_DIR], path.join(root, 'deps', 'lib')].filter(Boolean);
  for (const dir of candidates) {
    if (['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2'].every((l) => exists(path.join(dir, l)))) {
      return fs.realpathSync(dir);
    }
  }
  return null;
}

// What the installed project runs after install.
const LOAD_CHECK = `
const fs = require('fs');
const binding = require('tfjs-node-rs/js/native_loader');
const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n');
const lib = (name) => ((maps.find((l) => l.includes('/' + name)) || '').match(/(\\/\\S+)$/) || [])[1] || null;
console.log(JSON.stringify({
  tfVersion: binding.tfVersion(),
  addon: require.resolve('${PLATFORM_PACKAGE}'),
  libtensorflow: lib('libtensorflow_cc.so.2'),
  framework: lib('libtensorflow_framework.so.2'),
  logLevel: process.env.TF_CPP_MIN_LOG_LEVEL,
}));
`;

const TRAIN = `
'use strict';
const tf = require('tfjs-node-rs');
function check(ok, what) {
  if (!ok) { console.error('train check failed: ' + what); process.exit(1); }
}
async function main() {
  check(typeof tf.getBackend === 'function', 'require("tfjs-node-rs") exports no getBackend()');
  if (typeof tf.ready === 'function') await tf.ready();
  const backend = tf.getBackend();
  check(backend === 'tensorflow', "tf.getBackend() is '" + backend + "', not 'tensorflow'");
  check(typeof tf.sequential === 'function', 'require("tfjs-node-rs") exports no tf.sequential()');
  // y = 2x - 1
  const model = tf.sequential();
  model.add(tf.layers.dense({ units: 1, inputShape: [1] }));
  model.compile({ optimizer: tf.train.sgd(0.05), loss: 'meanSquaredError' });
  const xs = tf.tensor2d([-1, 0, 1, 2, 3, 4], [6, 1]);
  const ys = tf.tensor2d([-3, -1, 1, 3, 5, 7], [6, 1]);
  const started = Date.now();
  const history = await model.fit(xs, ys, { epochs: 250, verbose: 0 });
  const losses = history.history.loss;
  const pred = model.predict(tf.tensor2d([10], [1, 1]));
  const y10 = (await pred.data())[0];
  const result = {
    backend: tf.getBackend(),
    epochs: losses.length,
    firstLoss: losses[0],
    lastLoss: losses[losses.length - 1],
    predictionAt10: y10,
    fitSeconds: (Date.now() - started) / 1000,
  };
  console.log(JSON.stringify(result));
  check(result.lastLoss < result.firstLoss / 100, 'the loss did not drop 100-fold');
  check(Math.abs(y10 - 19) < 0.5, 'model.predict(10) = ' + y10 + ', expected about 19');
  check(tf.getBackend() === 'tensorflow', 'the backend changed during training');
}
main().catch((err) => { console.error(err && err.stack || err); process.exit(1); });
`;

function writeProject(dir) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({
    name: 'tfjs-node-rs-install-test',
    version: '0.0.0',
    private: true,
    // npm versions with install-script approval run (or, in the future, only run)
    // the postinstall that provides libtensorflow when it is allowed.
    allowScripts: { 'tfjs-node-rs': true },
    // The root package's optional dependency on the platform package resolves to
    // the tarball given on the command line, with no registry lookup.
    overrides: { [PLATFORM_PACKAGE]: `$${PLATFORM_PACKAGE}` },
  }, null, 2)}\n`);
  fs.writeFileSync(path.join(dir, 'train.js'), TRAIN);
}

async function installMode(mode, { tmp, packed, env: baseEnv, root }) {
  const project = path.join(tmp, `project-${mode}`);
  writeProject(project);
  const env = { ...baseEnv };
  let libDir = null;
  if (mode === 'env') {
    libDir = envLibDir(root);
    if (!libDir) throw fail(`env mode needs libtensorflow in ${path.join(root, 'deps', 'lib')} or $${ENV_DIR} (run npm install in the repository)`);
    env[ENV_DIR] = libDir;
  }
  const platformTgz = packed.platforms[0].file;
  const rootTgz = packed.root.file;

  const install = await timed(`[${mode}] npm install (${mode === 'env' ? `${ENV_DIR}=${libDir}` : 'no ' + ENV_DIR + ': cache / pip'})`, () =>
    npm(['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel', 'http', platformTgz, rootTgz], {
      cwd: project, env, label: 'npm install',
    }));
  for (const line of install.output.split('\n')) {
    if (/tfjs-node-rs(:| )/.test(line) && !/npm http/.test(line)) log(`  ${line.trim()}`);
  }

  // The platform package came from the tarball, never from the registry.
  const fetched = install.output.split('\n').filter((l) => /https?:\/\/\S*tfjs-node-rs/.test(l));
  if (fetched.length) throw fail(`npm fetched a tfjs-node-rs package from a registry:\n${fetched.join('\n')}`);
  const lock = JSON.parse(fs.readFileSync(path.join(project, 'package-lock.json'), 'utf8'));
  for (const name of ['tfjs-node-rs', PLATFORM_PACKAGE]) {
    const entry = lock.packages[`node_modules/${name}`];
    if (!entry || !/^file:.*\.tgz$/.test(entry.resolved || '')) {
      throw fail(`package-lock.json: ${name} is not installed from its tarball (${JSON.stringify(entry)})`);
    }
  }
  const nm = path.join(project, 'node_modules');
  const pkgDir = path.join(nm, 'tfjs-node-rs');
  const addon = path.join(nm, PLATFORM_PACKAGE, ADDON_FILE);
  if (!exists(addon)) throw fail(`${addon} is missing`);
  if (exists(path.join(pkgDir, 'node_modules', PLATFORM_PACKAGE))) throw fail('the platform package was installed twice (nested)');
  // No Rust sources, no build.
  for (const p of ['Cargo.toml', 'src', 'target', 'build.rs', ADDON_FILE]) {
    if (exists(path.join(pkgDir, p))) throw fail(`the installed package holds ${p}`);
  }
  const built = findFiles(project, (p, it) => it.isDirectory() && it.name === 'target' && exists(path.join(p, 'release')));
  if (built.length) throw fail(`a Rust build ran: ${built.join(', ')}`);
  // libtensorflow provided by postinstall.
  let marker;
  try {
    marker = JSON.parse(fs.readFileSync(path.join(pkgDir, 'deps', '.complete'), 'utf8'));
  } catch {
    throw fail(`postinstall did not provide libtensorflow (${path.join(pkgDir, 'deps', '.complete')} is missing); npm output:\n${install.output.slice(-4000)}`);
  }
  const wantKind = mode === 'env' ? 'directory' : 'wheel';
  if (marker.kind !== wantKind) throw fail(`deps/ was made from ${marker.kind} (${marker.source}), expected ${wantKind}`);
  log(`  libtensorflow ${marker.version} from ${marker.kind} ${marker.source}`);

  // The prebuilt addon finds libtensorflow through its RUNPATH.
  const loaded = await timed(`[${mode}] load the addon`, () => {
    const res = nodeScript(project, env, LOAD_CHECK, 'loading the addon');
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(loaded)}`);
  if (!/^2\./.test(loaded.tfVersion)) throw fail(`TF_Version is ${loaded.tfVersion}`);
  if (fs.realpathSync(loaded.addon) !== fs.realpathSync(addon)) throw fail(`the addon loaded from ${loaded.addon}, not ${addon}`);
  const expectLib = fs.realpathSync(path.join(pkgDir, 'deps', 'lib', 'libtensorflow_cc.so.2'));
  if (!loaded.libtensorflow || fs.realpathSync(loaded.libtensorflow) !== expectLib) {
    throw fail(`libtensorflow_cc.so.2 was loaded from ${loaded.libtensorflow}, not ${expectLib}`);
  }
  if (mode === 'cache' && !loaded.libtensorflow.startsWith(pkgDir + path.sep)) {
    throw fail(`libtensorflow_cc.so.2 was loaded from ${loaded.libtensorflow}, outside ${pkgDir}`);
  }
  if (loaded.logLevel !== '2') throw fail(`TF_CPP_MIN_LOG_LEVEL is ${loaded.logLevel} after loading, expected 2`);

  const trained = await timed(`[${mode}] train a model on the tensorflow backend`, () => {
    const res = run(process.execPath, ['train.js'], { cwd: project, env, label: 'train.js' });
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(trained)}`);

  if (mode === 'env') {
    // The message for a missing libtensorflow, and the fix it suggests.
    const depsDir = path.join(pkgDir, 'deps');
    fs.rmSync(depsDir, { recursive: true, force: true });
    // The loader throws; require('tfjs-node-rs') may throw it or (tfjs initializes
    // backends lazily) print it when the backend fails to start: either way the
    // user must see it.
    const probes = {
      'tfjs-node-rs/js/native_loader': "require('tfjs-node-rs/js/native_loader')",
      'tfjs-node-rs': "const tf = require('tfjs-node-rs'); Promise.resolve(tf.ready && tf.ready())" +
        ".then(() => console.log('backend: ' + tf.getBackend()))",
    };
    for (const [what, code] of Object.entries(probes)) {
      const broken = nodeScript(project, env, code, `require('${what}') without libtensorflow`, true);
      if (what === 'tfjs-node-rs/js/native_loader' && broken.status === 0) throw fail(`require('${what}') without libtensorflow succeeded`);
      if (!/libtensorflow is missing/.test(broken.output) || !/npm rebuild tfjs-node-rs/.test(broken.output)) {
        throw fail(`require('${what}') without libtensorflow did not say that libtensorflow is missing:\n${broken.output}`);
      }
      const line = broken.output.split('\n').find((l) => /libtensorflow is missing/.test(l)).trim();
      log(`  require('${what}') without deps/ (exit code ${broken.status}): ${line.slice(0, 160)}...`);
    }
    await timed(`[${mode}] npm rebuild tfjs-node-rs`, () =>
      npm(['rebuild', 'tfjs-node-rs', '--no-audit', '--no-fund'], { cwd: project, env, label: 'npm rebuild tfjs-node-rs' }));
    const again = nodeScript(project, env, "console.log(require('tfjs-node-rs/js/native_loader').tfVersion())", 'loading after npm rebuild');
    if (!/^2\./.test(again.stdout.trim())) throw fail(`after npm rebuild: ${again.output}`);
  }
  return { project, marker, loaded, trained };
}

// What the alias project runs: a program written for tfjs-node.
const ALIAS_CHECK = `
const tf = require('${ALIAS}');
tf.ready().then(() => {
  const squares = Array.from(tf.tensor([1, 2, 3]).square().dataSync());
  console.log(JSON.stringify({ backend: tf.getBackend(), tfVersion: tf.backend().binding.TF_Version,
                               rs: tf.version['tfjs-node-rs'], squares }));
});
`;

/** The root package installed under tfjs-node's name, as npm's alias puts it. */
async function installAlias(mode, { tmp, packed, env: baseEnv, root }) {
  const project = path.join(tmp, `project-${mode}`);
  writeProject(project);
  const libDir = envLibDir(root);
  if (!libDir) throw fail(`alias mode needs libtensorflow in ${path.join(root, 'deps', 'lib')} or $${ENV_DIR}`);
  const env = { ...baseEnv, [ENV_DIR]: libDir };
  // `name@file:<tgz>` installs the tarball under that name, exactly as `name@npm:tfjs-node-rs`
  // installs the registry's.
  await timed(`[${mode}] npm install ${ALIAS}@file:<root tgz>`, () =>
    npm(['install', '--no-audit', '--no-fund', '--prefer-offline', packed.platforms[0].file,
         `${ALIAS}@file:${packed.root.file}`], { cwd: project, env, label: 'npm install (alias)' }));
  const installed = path.join(project, 'node_modules', ...ALIAS.split('/'));
  if (!exists(path.join(installed, 'deps', '.complete'))) throw fail(`postinstall did not provide libtensorflow in ${installed}/deps`);
  const used = await timed(`[${mode}] require('${ALIAS}')`, () => {
    const res = nodeScript(project, env, ALIAS_CHECK, `require('${ALIAS}')`);
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(used)}`);
  if (used.backend !== 'tensorflow') throw fail(`tf.getBackend() is '${used.backend}', not 'tensorflow'`);
  if (!/^2\./.test(used.tfVersion)) throw fail(`tf.backend().binding.TF_Version is ${used.tfVersion}`);
  if (!used.rs) throw fail(`require('${ALIAS}') is not tfjs-node-rs`);
  if (JSON.stringify(used.squares) !== '[1,4,9]') throw fail(`squares: ${used.squares}`);
  return { project, used };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-install-'));
  log(`working in ${tmp}`);
  let ok = false;
  try {
    const packed = await timed('pack', () => pack({ root: opts.root, out: path.join(tmp, 'packs'), build: true }));
    const env = cleanEnv(tmp);
    log(`PATH without Rust: ${env.PATH}`);
    const modes = opts.mode === 'all' ? MODES : [opts.mode];
    if (modes.includes('cache')) {
      let free = Infinity;
      try {
        const s = fs.statfsSync(tmp);
        free = s.bavail * s.bsize;
      } catch {
        // unknown
      }
      if (free < 1200 * MB) {
        throw fail(`${tmp} has ${Math.round(free / MB)} MB free; the cache mode extracts ~850 MB of libtensorflow (set TMPDIR elsewhere)`);
      }
    }
    for (const mode of modes) {
      await (mode === 'alias' ? installAlias : installMode)(mode, { tmp, packed, env, root: opts.root });
      if (!opts.keep) fs.rmSync(path.join(tmp, `project-${mode}`), { recursive: true, force: true });
    }
    ok = true;
  } finally {
    const total = (Date.now() - started) / 1000;
    log('timings:');
    for (const [label, s] of timings) log(`  ${s.toFixed(1).padStart(7)} s  ${label}`);
    log(`  ${total.toFixed(1).padStart(7)} s  total`);
    if (opts.keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
    log(ok ? 'PASS' : 'FAIL');
  }
}

main().catch((err) => {
  process.stderr.write(`test:install: ${err.code === 'TFJS_NODE_RS_TEST_INSTALL' || err.code === 'TFJS_NODE_RS_PACK' ? err.message : err.stack}\n`);
  process.exitCode = 1;
});
