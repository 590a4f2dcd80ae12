#!/usr/bin/env node
'use strict';
// `npm run test:install`: installs tfjs-node-rs the way a user does, from the
// packed packages, with no Rust toolchain and no python3, and uses it.
//
//   1. packs the root package and the per-platform package (scripts/pack.js;
//      builds the addon first if it is missing or stale);
//   2. with cargo, rustc, python3 and pip removed from PATH (CARGO_HOME /
//      RUSTUP_HOME pointing nowhere), installs `npm install --ignore-scripts <platform tgz>
//      <root tgz>` into fresh projects in the temp folder (the packages have no install
//      scripts: the first require provides libtensorflow, js/first_use.js):
//        env:    TFJS_NODE_RS_LIBTENSORFLOW=<repo>/deps/lib (deps/ in the project,
//                libs symlinked); then, with deps/ removed, the next require makes it again;
//        shared: an empty cache (XDG_CACHE_HOME in the temp folder), filled at the first
//                require by the package's own index client (no pip) from the package index:
//                by default a mirror on 127.0.0.1 that serves the wheel this
//                machine already has (see indexSource), or the real index
//                (--index real). The first project's first require runs in two processes
//                at once (one fetches, the other waits for it); a second project reuses the
//                shared copy; each project's node_modules/tfjs-node-rs must stay under 50 MB.
//                Then the shared copy is removed (a cleaned cache), and the next require
//                provides it again;
//        copy:   TFJS_NODE_RS_COPY_LIBTENSORFLOW=1: the libraries inside the project;
//        alias:  the root package installed as `@tensorflow/tfjs-node` (what npm's
//                `@tensorflow/tfjs-node@npm:tfjs-node-rs` makes, so that libraries built
//                for tfjs-node use this package), TFJS_NODE_RS_LIBTENSORFLOW set:
//                `require('@tensorflow/tfjs-node')` runs ops on the 'tensorflow' backend
//                and its binding carries tfjs-node's TF_Version;
//        managers: `pnpm add` (pnpm's own layout: the platform package in node_modules/.pnpm,
//                away from the root package), `bun add` (the program run by Bun) and
//                `yarn add` (Yarn 4 with its node_modules linker), from npm's registry, and npm's
//                install run by Deno; this machine's cache: none of them reports an install
//                script of these packages, and a model trains on each;
//        gpu:    the NVIDIA GPU package tfjs-node-rs-gpu, offline: an empty cache holding only
//                (links to) this machine's tensorflow (CUDA build) wheel, an unreachable index;
//                deps/ links the GPU build's shared copy; without an NVIDIA driver no cuda/ and
//                TF reports no GPU; where this machine's cache also holds the nvidia-*-cu12
//                wheels, a require with `TFJS_NODE_RS_CUDA=1` links cuda/ and every
//                CUDA library is loaded from there; then the package installed as
//                `@tensorflow/tfjs-node-gpu` (npm's alias);
//      each time it checks: no registry fetch of the tfjs-node-rs packages, no Rust
//      sources, no build; deps/ as expected; the addon loads libtensorflow from
//      where deps/ says; a small model trains on the 'tensorflow' backend;
//   3. prints the timings and sizes; removes the temp folder (unless --keep).
//
//   node scripts/test-install.js [--mode all|env|shared|copy|alias|managers|gpu] [--index mirror|real] [--keep] [--root DIR]

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawn, spawnSync} = require('child_process');
const {pack, npmCommand} = require('./pack');
const {exists, cacheDir, sharedDir, sharedCudaDir, hostTarget, provideShared, COPY_ENV, _internal: {findCachedWheel, wheelSpec, cudaWheelSpec}} = require('./libtensorflow');
const {GPU_PACKAGE, CUDA_WHEELS, CUDA_ENV} = require('../js/libtensorflow_facts');
const {cudaLibraryPaths, nvidiaDriver} = require('../js/cuda');
const {PLATFORM_PACKAGE, ADDON_FILE} = require('../js/native_loader_core');
const OTHER_PLATFORM_PACKAGES = Object.keys(require('../package.json').optionalDependencies).filter((p) => p !== PLATFORM_PACKAGE);

const ROOT = path.resolve(__dirname, '..');
// What a user without Rust and Python lacks.
const HIDDEN_TOOLS = ['cargo', 'rustc', 'rustup', 'rustdoc', 'python3', 'python', 'pip', 'pip3'];
// Everything installed beside them (cargo-clippy, rustfmt, clippy-driver, python3.11, pip3.11, ...).
const HIDDEN_TOOL_RE = /^(cargo|rust|clippy|rls|python|pip)/;
const PROJECT_LIMIT = 50 * 1024 * 1024; // node_modules/tfjs-node-rs with the shared copy linked
const ENV_DIR = 'TFJS_NODE_RS_LIBTENSORFLOW';
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

const MODES = ['env', 'shared', 'copy', 'alias', 'managers', 'gpu'];
const USAGE = 'usage: node scripts/test-install.js [--mode all|env|shared|copy|alias|managers|gpu] [--index mirror|real] [--keep] [--root DIR]';
/** The names libraries made for tfjs-node and tfjs-node-gpu require. */
const ALIAS = '@tensorflow/tfjs-node';
const GPU_ALIAS = '@tensorflow/tfjs-node-gpu';
const GPU_KEY = 'linux-x64-gpu';

function parseArgs(argv) {
  const opts = {mode: 'all', index: 'mirror', keep: false, root: ROOT};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [key, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, null];
    const value = () => (inline !== null ? inline : argv[++i]);
    if (key === '--mode') opts.mode = value();
    else if (key === '--index') opts.index = value();
    else if (key === '--keep') opts.keep = true;
    else if (key === '--root') opts.root = path.resolve(value());
    else throw fail(`unknown argument ${a} (${USAGE})`);
  }
  if (![...MODES, 'all'].includes(opts.mode)) throw fail(`--mode must be all, ${MODES.join(', ')} (got ${opts.mode})`);
  if (!['mirror', 'real'].includes(opts.index)) throw fail(`--index must be mirror or real (got ${opts.index})`);
  return opts;
}

// ---------------------------------------------------------------------------
// The environment of a user without Rust and Python.

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

// PATH without the hidden tools: folders holding only them are dropped; a folder
// that holds them among other tools (e.g. /usr/bin) is replaced by a folder of
// symlinks to everything else in it.
function pathWithoutTools(pathValue, shadowBase) {
  const out = [];
  let shadows = 0;
  for (const dir of [...new Set((pathValue || '').split(path.delimiter).filter(Boolean))]) {
    // What `npm run` prepends (this checkout's node_modules/.bin, npm's node-gyp shim).
    if (/[\\/]node_modules[\\/]\.bin$/.test(dir) || /[\\/]node-gyp-bin$/.test(dir)) continue;
    const hidden = HIDDEN_TOOLS.filter((t) => isExecutable(path.join(dir, t)));
    if (!hidden.length) {
      out.push(dir);
      continue;
    }
    let names;
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    const others = names.filter((n) => !HIDDEN_TOOLS.includes(n) && !HIDDEN_TOOL_RE.test(n));
    if (!others.length) continue;
    const shadow = path.join(shadowBase, `path-${shadows++}`);
    fs.mkdirSync(shadow, {recursive: true});
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
  env.PATH = pathWithoutTools(process.env.PATH, path.join(tmp, 'bin'));
  delete env[ENV_DIR];
  delete env[COPY_ENV];
  delete env.LD_LIBRARY_PATH;
  delete env.NAPI_RS_NATIVE_LIBRARY_PATH;
  delete env.TFJS_NODE_RS_SKIP_BUILD;
  env.npm_config_update_notifier = 'false';
  const probe = spawnSync('sh', ['-c', `for t in ${HIDDEN_TOOLS.join(' ')}; do command -v $t; done`], {env, encoding: 'utf8'});
  if ((probe.stdout || '').trim()) throw fail(`could not remove Rust and Python from PATH: ${probe.stdout.trim()}`);
  const node = spawnSync('sh', ['-c', 'command -v node'], {env, encoding: 'utf8'});
  if (!(node.stdout || '').trim()) throw fail('node is not on PATH without the Rust and Python folders');
  return env;
}

// ---------------------------------------------------------------------------

function run(cmd, args, {cwd, env, label, allowFail = false}) {
  const res = spawnSync(cmd, args, {cwd, env, encoding: 'utf8', maxBuffer: 256 * MB});
  if (res.error) throw res.error;
  const output = `${res.stdout || ''}${res.stderr || ''}`;
  if (res.status !== 0 && !allowFail) {
    throw fail(`${label} failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`}):\n${output.trim().split('\n').slice(-40).join('\n')}`);
  }
  return {status: res.status, stdout: res.stdout || '', stderr: res.stderr || '', output};
}

function npm(args, opts) {
  const {cmd, pre} = npmCommand(opts.env);
  return run(cmd, [...pre, ...args], opts);
}

function nodeScript(project, env, code, label, allowFail = false) {
  return run(process.execPath, ['-e', code], {cwd: project, env, label, allowFail});
}

// Runs `code` with node in `project` without blocking the event loop (several at once).
function nodeScriptAsync(project, env, code) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', code], {cwd: project, env, stdio: ['ignore', 'pipe', 'pipe']});
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => {
      if (status === 0) resolve({stdout, stderr});
      else reject(fail(`node -e <load check> exited with code ${status}:\n${stderr.trim().split('\n').slice(-30).join('\n')}`));
    });
  });
}

/** Fails when a package manager's output names an install script of one of these packages. */
function checkNoInstallScripts(output, label) {
  const ours = output.split('\n').filter((l) => /script/i.test(l) && /tfjs-node-rs/.test(l) && !/^npm http/.test(l));
  if (ours.length) throw fail(`${label} reports an install script of these packages:\n${ours.join('\n')}`);
}

function readMarker(pkgDir) {
  const file = path.join(pkgDir, 'deps', '.complete');
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    throw fail(`the first require did not provide libtensorflow (${file} is missing)`);
  }
}

function findFiles(dir, test, out = []) {
  let items;
  try {
    items = fs.readdirSync(dir, {withFileTypes: true});
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

// What the installed project runs after install: which libraries package `pkg` loaded.
const loadCheck = (pkg) => `
const fs = require('fs');
const binding = require('${pkg}/js/native_loader');
const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n');
const lib = (name) => ((maps.find((l) => l.includes('/' + name)) || '').match(/(\\/\\S+)$/) || [])[1] || null;
const files = maps.map((l) => (l.match(/(\\/\\S+)$/) || [])[1]).filter(Boolean);
console.log(JSON.stringify({
  tfVersion: binding.tfVersion(),
  addon: require.resolve('${PLATFORM_PACKAGE}'),
  libtensorflow: lib('libtensorflow_cc.so.2'),
  framework: lib('libtensorflow_framework.so.2'),
  cudaLibs: [...new Set(files.filter((f) => /\\/nvidia\\/[^/]+\\/lib\\//.test(f)))].map((f) => fs.realpathSync(f)),
  gpu: binding.isUsingGpuDevice(),
  logLevel: process.env.TF_CPP_MIN_LOG_LEVEL,
}));
`;

const trainScript = (pkg) => `
'use strict';
const tf = require('${pkg}');
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

// platformPackage: the per-platform package installed from its tarball (this machine's by default);
// pkg: the root package the project uses.
function writeProject(dir, platformPackage = PLATFORM_PACKAGE, pkg = 'tfjs-node-rs') {
  fs.mkdirSync(dir, {recursive: true});
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({
    name: 'tfjs-node-rs-install-test',
    version: '0.0.0',
    private: true,
    // The root package's optional dependency on the platform package resolves to
    // the tarball given on the command line, with no registry lookup.
    overrides: {[platformPackage]: `$${platformPackage}`},
  }, null, 2)}\n`);
  fs.writeFileSync(path.join(dir, 'train.js'), trainScript(pkg));
}

// Bytes a folder takes on disk, links not followed (what `du -s` reports).
function diskUsage(dir) {
  let total = 0;
  const walk = (p) => {
    const st = fs.lstatSync(p);
    total += st.blocks * 512;
    if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n));
  };
  walk(dir);
  return total;
}

function fmtMB(bytes) {
  return `${(bytes / MB).toFixed(1)} MB`;
}

const sizes = [];

// deps/ as each layout must leave it: { tree (where the libraries are), check() }.
function expectedDeps(layout, {pkgDir, env, libDir, key}) {
  const deps = path.join(pkgDir, 'deps');
  const isLink = exists(deps) && fs.lstatSync(deps).isSymbolicLink();
  if (layout === 'link') {
    const shared = sharedDir(env, key);
    if (!isLink || fs.readlinkSync(deps) !== shared) throw fail(`${deps} is not a link to the shared copy ${shared}`);
    return {tree: shared, kind: 'wheel'};
  }
  if (isLink) throw fail(`${deps} is a link, expected a folder inside the project`);
  return layout === 'copy' ? {tree: deps, kind: 'wheel'} : {tree: libDir, kind: 'directory'};
}

// Installs the packed packages into a new project and checks and uses it.
// layout: 'env' ($TFJS_NODE_RS_LIBTENSORFLOW), 'link' (the shared copy) or 'copy'.
// pkg: the root package (tfjs-node-rs, or the GPU package with gpu: true, whose libtensorflow is
// the shared copy of platform key GPU_KEY); together: the first require in two processes at once.
// Returns the project, the package's folder and what the load check saw.
async function installProject(name, layout, {tmp, packed, env, libDir, gpu = false, together = false}) {
  const pkg = gpu ? GPU_PACKAGE : 'tfjs-node-rs';
  const key = gpu ? GPU_KEY : undefined;
  const project = path.join(tmp, `project-${name}`);
  writeProject(project, PLATFORM_PACKAGE, pkg);
  const platformTgz = packed.platforms[0].file;
  const rootTgz = gpu ? packed.gpu.file : packed.root.file;
  const install = await timed(`[${name}] npm install --ignore-scripts`, () =>
    npm(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel', 'http', platformTgz, rootTgz], {
      cwd: project, env, label: 'npm install',
    }));
  checkNoInstallScripts(install.output, `npm install (${name})`);

  // The root and platform packages came from their tarballs, never from the registry. npm only
  // looks up the other platforms' packages (a 404 until they are published), and skips them.
  const fetched = install.output.split('\n').filter((l) => {
    const name = (/https?:\/\/(?!127\.0\.0\.1)\S*\/(tfjs-node-rs[^\s/]*)/.exec(l) || [])[1];
    return name && !OTHER_PLATFORM_PACKAGES.includes(name);
  });
  if (fetched.length) throw fail(`npm fetched a tfjs-node-rs package from a registry:\n${fetched.join('\n')}`);
  const lock = JSON.parse(fs.readFileSync(path.join(project, 'package-lock.json'), 'utf8'));
  for (const installed of [pkg, PLATFORM_PACKAGE]) {
    const entry = lock.packages[`node_modules/${installed}`];
    if (!entry || !/^file:.*\.tgz$/.test(entry.resolved || '')) {
      throw fail(`package-lock.json: ${installed} is not installed from its tarball (${JSON.stringify(entry)})`);
    }
  }
  const nm = path.join(project, 'node_modules');
  const pkgDir = path.join(nm, pkg);
  const addon = path.join(nm, PLATFORM_PACKAGE, ADDON_FILE);
  if (!exists(addon)) throw fail(`${addon} is missing`);
  if (exists(path.join(pkgDir, 'node_modules', PLATFORM_PACKAGE))) throw fail('the platform package was installed twice (nested)');
  const foreign = OTHER_PLATFORM_PACKAGES.filter((p) => exists(path.join(nm, p)) || exists(path.join(pkgDir, 'node_modules', p)));
  if (foreign.length) throw fail(`npm installed another platform's package: ${foreign.join(', ')}`);
  // No Rust sources, no build.
  for (const p of ['Cargo.toml', 'src', 'target', 'build.rs', ADDON_FILE]) {
    if (exists(path.join(pkgDir, p))) throw fail(`the installed package holds ${p}`);
  }
  const built = findFiles(project, (p, it) => it.isDirectory() && it.name === 'target' && exists(path.join(p, 'release')));
  if (built.length) throw fail(`a Rust build ran: ${built.join(', ')}`);
  if (exists(path.join(pkgDir, 'deps'))) throw fail(`${path.join(pkgDir, 'deps')} exists before the first require`);

  // The first require provides libtensorflow (js/first_use.js); with `together`, two processes
  // at once, one of which waits for the other.
  const firstLoads = await timed(`[${name}] first require${together ? ', two processes at once' : ''}`, () =>
    Promise.all(Array.from({length: together ? 2 : 1}, () => nodeScriptAsync(project, env, loadCheck(pkg)))));
  for (const first of firstLoads) {
    const said = first.stderr.split('\n').filter((l) => /tfjs-node-rs:/.test(l)).map((l) => l.trim());
    for (const line of said) log(`  ${line.slice(0, 240)}`);
    if (!said.some((l) => /first use of this install/.test(l))) throw fail(`the first require did not say it provides libtensorflow:\n${first.stderr}`);
  }
  const marker = readMarker(pkgDir);
  const want = expectedDeps(layout, {pkgDir, env, libDir, key});
  if (marker.kind !== want.kind) throw fail(`deps/ was made from ${marker.kind} (${marker.source}), expected ${want.kind}`);
  log(`  libtensorflow ${marker.version} from ${marker.kind} ${marker.source}`);
  const projectBytes = diskUsage(pkgDir);
  sizes.push([`[${name}] node_modules/${pkg}`, projectBytes], [`[${name}] node_modules`, diskUsage(nm)]);
  if (layout !== 'copy' && projectBytes > PROJECT_LIMIT) {
    throw fail(`node_modules/${pkg} takes ${fmtMB(projectBytes)}, over ${fmtMB(PROJECT_LIMIT)}`);
  }

  // The prebuilt addon finds libtensorflow through its RUNPATH, where deps/ says.
  const loaded = await timed(`[${name}] load the addon`, () => {
    const res = nodeScript(project, env, loadCheck(pkg), 'loading the addon');
    if (/first use of this install/.test(res.stderr)) throw fail(`a second require provided libtensorflow again:\n${res.stderr}`);
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(loaded)}`);
  if (!/^2\./.test(loaded.tfVersion)) throw fail(`TF_Version is ${loaded.tfVersion}`);
  if (fs.realpathSync(loaded.addon) !== fs.realpathSync(addon)) throw fail(`the addon loaded from ${loaded.addon}, not ${addon}`);
  const expectLib = fs.realpathSync(path.join(want.tree, layout === 'env' ? '' : 'lib', 'libtensorflow_cc.so.2'));
  if (!loaded.libtensorflow || fs.realpathSync(loaded.libtensorflow) !== expectLib) {
    throw fail(`libtensorflow_cc.so.2 was loaded from ${loaded.libtensorflow}, not ${expectLib}`);
  }
  // The GPU package on a machine without a driver hides TF's cuInit error line (level 3).
  const level = gpu && !nvidiaDriver() ? '3' : '2';
  if (loaded.logLevel !== level) throw fail(`TF_CPP_MIN_LOG_LEVEL is ${loaded.logLevel} after loading, expected ${level}`);

  const trained = await timed(`[${name}] train a model on the tensorflow backend`, () => {
    const res = run(process.execPath, ['train.js'], {cwd: project, env, label: 'train.js'});
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(trained)}`);
  return {project, pkgDir, loaded};
}

const aliasCheck = (alias) => `
const tf = require('${alias}');
tf.ready().then(() => {
  const squares = Array.from(tf.tensor([1, 2, 3]).square().dataSync());
  const maps = require('fs').readFileSync('/proc/self/maps', 'utf8');
  console.log(JSON.stringify({ backend: tf.getBackend(), tfVersion: tf.backend().binding.TF_Version,
                               rs: tf.version['tfjs-node-rs'], squares,
                               libtensorflow: (maps.match(/\\/\\S+\\/libtensorflow_cc\\.so\\.2/) || [])[0] }));
});
`;

/**
 * The root package installed under tfjs-node's name, as npm's alias puts it (or, with gpu, the
 * GPU package under tfjs-node-gpu's). Returns the project and what the check saw.
 */
async function installAlias({tmp, packed, env, gpu = false}) {
  const alias = gpu ? GPU_ALIAS : ALIAS;
  const label = gpu ? 'gpu-alias' : 'alias';
  const project = path.join(tmp, `project-${label}`);
  writeProject(project, PLATFORM_PACKAGE, alias);
  await timed(`[${label}] npm install ${alias}@file:<${gpu ? 'gpu' : 'root'} tgz>`, () =>
    npm(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', packed.platforms[0].file,
         `${alias}@file:${gpu ? packed.gpu.file : packed.root.file}`], {cwd: project, env, label: `npm install (${label})`}));
  const used = await timed(`[${label}] require('${alias}')`, () => {
    const res = nodeScript(project, env, aliasCheck(alias), `require('${alias}')`);
    return JSON.parse(res.stdout.trim().split('\n').pop());
  });
  log(`  ${JSON.stringify(used)}`);
  readMarker(path.join(project, 'node_modules', ...alias.split('/')));
  if (used.backend !== 'tensorflow') throw fail(`tf.getBackend() is '${used.backend}', not 'tensorflow'`);
  if (!/^2\./.test(used.tfVersion)) throw fail(`tf.backend().binding.TF_Version is ${used.tfVersion}`);
  if (!used.rs) throw fail(`require('${alias}') is not tfjs-node-rs`);
  if (JSON.stringify(used.squares) !== '[1,4,9]') throw fail(`squares: ${used.squares}`);
  return {project, used};
}

// With libtensorflow gone (`remove()`), the next require says why (`expected`) and provides it
// again, and the package works.
async function breakAndRepair(name, {project, env, remove, expected}) {
  remove();
  const again = await timed(`[${name}] require after removing libtensorflow`, () =>
    nodeScript(project, env, "console.log(require('tfjs-node-rs/js/native_loader').tfVersion())", 'require after removing libtensorflow'));
  const said = again.stderr.split('\n').find((l) => /first use of this install/.test(l));
  if (!said || !expected.test(said)) throw fail(`the require after removing libtensorflow did not say ${expected}:\n${again.output}`);
  log(`  ${said.trim().slice(0, 240)}`);
  if (!/^2\./.test(again.stdout.trim())) throw fail(`after removing libtensorflow: ${again.output}`);
}

// The GPU package offline: an empty cache of its own holding links to this machine's wheels (the
// tensorflow CUDA build, unpacked here once first if missing; the nvidia-*-cu12 ones when the
// machine has them all), and an index that cannot be reached.
async function testGpu({tmp, packed, env}) {
  const machineCache = cacheDir(process.env);
  await timed('[gpu] the tensorflow (CUDA build) wheel in this machine\'s cache', () => provideShared({key: GPU_KEY, log}));
  const cache = path.join(tmp, 'gpu-cache', 'tfjs-node-rs');
  fs.mkdirSync(cache, {recursive: true});
  const wheels = [wheelSpec(GPU_KEY), ...CUDA_WHEELS.map(cudaWheelSpec)].map((spec) => findCachedWheel(machineCache, spec));
  for (const wheel of wheels.filter(Boolean)) fs.symlinkSync(wheel, path.join(cache, path.basename(wheel)));
  const haveCuda = wheels.slice(1).every(Boolean);
  const gpuEnv = {...env, XDG_CACHE_HOME: path.dirname(cache), PIP_INDEX_URL: 'http://127.0.0.1:9/simple/', PIP_CONFIG_FILE: os.devnull};
  delete gpuEnv[CUDA_ENV];
  const driver = nvidiaDriver();
  if (driver && !haveCuda) {
    throw fail(`this machine has an NVIDIA driver (${driver.where}), so the GPU package's install fetches the CUDA libraries: ` +
      `put the nvidia-*-cu12 wheels in ${machineCache} first (TFJS_NODE_RS_CUDA=1 npm run test:gpu-on-cpu does)`);
  }
  const {project, pkgDir, loaded} = await installProject('gpu', 'link', {tmp, packed, env: gpuEnv, gpu: true});
  const cudaLink = path.join(pkgDir, 'cuda');
  if (!driver) {
    if (exists(cudaLink)) throw fail(`no NVIDIA driver here, yet the install made ${cudaLink}`);
    if (loaded.cudaLibs.length || loaded.gpu) throw fail(`no NVIDIA driver here, yet ${JSON.stringify(loaded)}`);
  }
  if (haveCuda) {
    // Without a driver the loader leaves the CUDA libraries alone unless told to load them.
    const cudaEnv = {...gpuEnv, [CUDA_ENV]: '1'};
    const shared = sharedCudaDir(gpuEnv);
    const withCuda = await timed(`[gpu] ${CUDA_ENV}=1: the next require provides and loads the CUDA libraries`, () =>
      JSON.parse(nodeScript(project, cudaEnv, loadCheck(GPU_PACKAGE), 'loading the CUDA libraries').stdout.trim().split('\n').pop()));
    const want = cudaLibraryPaths(shared).map((p) => fs.realpathSync(p)).sort();
    if (JSON.stringify([...withCuda.cudaLibs].sort()) !== JSON.stringify(want)) {
      throw fail(`the CUDA libraries loaded are ${withCuda.cudaLibs.join(', ')}, expected ${want.join(', ')}`);
    }
    if (!isLinkTo(cudaLink, shared)) throw fail(`${cudaLink} is not a link to the shared CUDA libraries ${shared}`);
    log(`  ${withCuda.cudaLibs.length} CUDA libraries loaded from ${shared}; GPU: ${withCuda.gpu}`);
    sizes.push(['[gpu] the shared CUDA libraries', diskUsage(shared)]);
    await timed('[gpu] train with the CUDA libraries loaded', () => run(process.execPath, ['train.js'], {cwd: project, env: cudaEnv, label: 'train.js'}));
  } else {
    log(`  the nvidia-*-cu12 wheels are not all in ${machineCache}: the CUDA libraries part is left out`);
  }
  sizes.push(['[gpu] the shared copy of the GPU build', diskUsage(sharedDir(gpuEnv, GPU_KEY))]);
  const {used} = await installAlias({tmp, packed, env: gpuEnv, gpu: true});
  const gpuLib = fs.realpathSync(path.join(sharedDir(gpuEnv, GPU_KEY), 'lib', 'libtensorflow_cc.so.2'));
  if (!used.libtensorflow || fs.realpathSync(used.libtensorflow) !== gpuLib) {
    throw fail(`require('${GPU_ALIAS}') loaded ${used.libtensorflow}, not ${gpuLib}`);
  }
}

// Package tarballs standing in for the other platforms' packages (not published from here):
// name, version, os and cpu only, so that a package manager that resolves every optional
// dependency (Yarn) does so offline, and then skips them on this machine.
function otherPlatformStubs(tmp) {
  return OTHER_PLATFORM_PACKAGES.map((name) => {
    const suffix = name.slice('tfjs-node-rs-'.length);
    const {version, os: osList, cpu, libc} = JSON.parse(fs.readFileSync(path.join(ROOT, 'npm', suffix, 'package.json'), 'utf8'));
    const dir = path.join(tmp, 'stubs', suffix);
    fs.mkdirSync(path.join(dir, 'package'), {recursive: true});
    fs.writeFileSync(path.join(dir, 'package', 'package.json'), JSON.stringify({name, version, os: osList, cpu, libc}));
    const file = path.join(tmp, 'stubs', `${name}-${version}.tgz`);
    run('tar', ['czf', file, '-C', dir, 'package'], {label: `tar ${name}`});
    return {name, file};
  });
}

/**
 * The packages added with pnpm, Bun and Yarn (from npm's registry; their install scripts off, as
 * each now does by default), and with npm for a program run by Deno: no output about an install
 * script of ours; the first run of train.cjs (with Bun for Bun, Deno for Deno) provides
 * libtensorflow next to the addon wherever the manager put it, and a model trains.
 */
async function testManagers({tmp, packed, env}) {
  const {pnpmBinary, bunBinary, denoBinary, yarnScript} = require('./runtimes');
  const {cmd: npmCmd, pre: npmPre} = npmCommand(env);
  const platformTgz = packed.platforms[0].file;
  const rootTgz = packed.root.file;
  const stubs = otherPlatformStubs(tmp);
  const managers = [
    {
      name: 'pnpm',
      files: {'pnpm-workspace.yaml': `overrides:\n  ${PLATFORM_PACKAGE}: file:${platformTgz}\nstrictDepBuilds: false\n`},
      add: [pnpmBinary(), ['add', rootTgz]],
      runner: process.execPath,
    },
    {
      name: 'bun',
      manifest: {overrides: {[PLATFORM_PACKAGE]: platformTgz}},
      add: [bunBinary(), ['add', rootTgz]],
      runner: bunBinary(),
    },
    {
      name: 'yarn',
      manifest: {resolutions: Object.fromEntries([[PLATFORM_PACKAGE, platformTgz], ...stubs.map((p) => [p.name, p.file])]
        .map(([n, f]) => [n, `file:${f}`]))},
      files: {'.yarnrc.yml': 'nodeLinker: node-modules\nenableTelemetry: false\n', 'yarn.lock': ''},
      add: [process.execPath, [yarnScript(), 'add', `tfjs-node-rs@file:${rootTgz}`]],
      runner: process.execPath,
    },
    {
      // Deno runs a package.json project's node_modules; -A grants what the addon needs (FFI).
      name: 'deno',
      add: [npmCmd, [...npmPre, 'install', '--ignore-scripts', '--no-audit', '--no-fund', platformTgz, rootTgz]],
      runner: denoBinary(),
      runnerArgs: ['run', '-A'],
    },
  ];
  for (const m of managers) {
    const project = path.join(tmp, `project-${m.name}`);
    writeProject(project);
    const manifest = JSON.parse(fs.readFileSync(path.join(project, 'package.json'), 'utf8'));
    delete manifest.overrides;
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({...manifest, ...m.manifest}, null, 2));
    for (const [file, text] of Object.entries(m.files || {})) fs.writeFileSync(path.join(project, file), text);
    const added = await timed(`[${m.name}] install`, () => run(m.add[0], m.add[1], {cwd: project, env, label: `${m.name}: install`}));
    checkNoInstallScripts(added.output, `${m.name}: install`);
    // train.cjs: Deno reads a .js file without package.json's "type" as an ES module.
    fs.copyFileSync(path.join(project, 'train.js'), path.join(project, 'train.cjs'));
    const trained = await timed(`[${m.name}] first run of train.cjs`, () =>
      run(m.runner, [...(m.runnerArgs || []), 'train.cjs'], {cwd: project, env, label: `train.cjs (${m.name})`}));
    if (!/first use of this install/.test(trained.stderr)) throw fail(`[${m.name}] the first run did not provide libtensorflow:\n${trained.stderr}`);
    log(`  ${trained.stdout.trim().split('\n').pop()}`);
  }
}

function isLinkTo(link, target) {
  try {
    return fs.readlinkSync(link) === target;
  } catch {
    return false;
  }
}

// Where the shared and copy modes' empty cache gets the wheel from. By default a
// mirror on 127.0.0.1 serving the wheel this machine's cache already holds (put
// there by the checkout's own `npm install`, which fetched and checked it with the
// same index client): the first require runs the whole download path (simple-API
// JSON, streaming, sha256) without moving 274 MB over the network on every CI
// run. With --index real, or when the machine has no wheel, the real index.
function findMachineWheel() {
  const cache = cacheDir(process.env);
  let names = [];
  try {
    names = fs.readdirSync(cache);
  } catch {
    // no cache
  }
  const wheel = names.find((n) => /^tensorflow_cpu-2\.21\.0-cp311-cp311-manylinux_2_27_x86_64\.whl$/.test(n));
  return wheel ? path.join(cache, wheel) : null;
}

// `wheel`: the file to serve (test:windows serves the win_amd64 one); the machine's x64 wheel by default.
async function indexSource(choice, wheel = choice === 'mirror' ? findMachineWheel() : null) {
  if (!wheel) {
    log(choice === 'mirror' ? 'no cached wheel on this machine: the empty cache is filled from the real index' : 'the empty cache is filled from the real index');
    return {env: {}, stop() {}};
  }
  const server = spawn(process.execPath, ['-e', `
    const fs = require('fs');
    const { startIndex } = require(${JSON.stringify(path.join(ROOT, '__test__', 'support', 'index_server.js'))});
    const file = ${JSON.stringify(wheel)};
    startIndex([{ filename: require('path').basename(file), data: fs.readFileSync(file) }])
      .then((index) => console.log(index.url));
  `], {stdio: ['ignore', 'pipe', 'inherit']});
  const url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.trim());
    });
    server.on('exit', (code) => reject(fail(`the index mirror exited (code ${code})`)));
  });
  log(`index mirror of ${wheel} at ${url}`);
  return {env: {PIP_INDEX_URL: url, PIP_CONFIG_FILE: os.devnull}, stop: () => server.kill()};
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-install-'));
  log(`working in ${tmp}`);
  let ok = false;
  let source = null;
  try {
    const packed = await timed('pack', () => pack({root: opts.root, out: path.join(tmp, 'packs'), build: true, targets: [hostTarget()]}));
    const env = cleanEnv(tmp);
    log(`PATH without Rust and Python: ${env.PATH}`);
    const modes = opts.mode === 'all' ? MODES : [opts.mode];
    const ctx = {tmp, packed};
    if (modes.includes('env') || modes.includes('alias')) {
      const libDir = envLibDir(opts.root);
      if (!libDir) throw fail(`env and alias modes need libtensorflow in ${path.join(opts.root, 'deps', 'lib')} or $${ENV_DIR} (run npm install in the repository)`);
      const envEnv = {...env, [ENV_DIR]: libDir};
      if (modes.includes('env')) {
        const {project, pkgDir} = await installProject('env', 'env', {...ctx, env: envEnv, libDir});
        await breakAndRepair('env', {
          project, env: envEnv, expected: /deps is not set up/,
          remove: () => fs.rmSync(path.join(pkgDir, 'deps'), {recursive: true, force: true}),
        });
        if (!opts.keep) fs.rmSync(project, {recursive: true, force: true});
      }
      if (modes.includes('alias')) {
        const {project} = await installAlias({...ctx, env: envEnv});
        if (!opts.keep) fs.rmSync(project, {recursive: true, force: true});
      }
    }
    if (modes.includes('shared') || modes.includes('copy')) {
      const free = fs.statfsSync(tmp).bavail * fs.statfsSync(tmp).bsize;
      if (free < 1800 * MB) {
        throw fail(`${tmp} has ${Math.round(free / MB)} MB free; the wheel, the shared copy and a copy take ~1.6 GB (set TMPDIR elsewhere)`);
      }
      source = await indexSource(opts.index);
      // An empty cache of its own; the index (or its mirror) is the only source.
      const cachedEnv = {...env, ...source.env, XDG_CACHE_HOME: path.join(tmp, 'cache')};
      if (modes.includes('shared')) {
        await installProject('first', 'link', {...ctx, env: cachedEnv, together: true});
        const second = await installProject('second', 'link', {...ctx, env: cachedEnv});
        await breakAndRepair('second', {
          project: second.project, env: cachedEnv, expected: /no longer leads to the libraries/,
          remove: () => fs.rmSync(sharedDir(cachedEnv), {recursive: true}),
        });
      }
      if (modes.includes('copy')) {
        await installProject('copy', 'copy', {...ctx, env: {...cachedEnv, [COPY_ENV]: '1'}});
      }
    }
    if (modes.includes('managers')) await testManagers({...ctx, env});
    if (modes.includes('gpu')) await testGpu({...ctx, env});
    ok = true;
  } finally {
    if (source) source.stop();
    const total = (Date.now() - started) / 1000;
    log('timings:');
    for (const [label, s] of timings) log(`  ${s.toFixed(1).padStart(7)} s  ${label}`);
    log(`  ${total.toFixed(1).padStart(7)} s  total`);
    log('sizes on disk (links not followed):');
    for (const [label, bytes] of sizes) log(`  ${fmtMB(bytes).padStart(10)}  ${label}`);
    if (opts.keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, {recursive: true, force: true});
    log(ok ? 'PASS' : 'FAIL');
  }
}

module.exports = {cleanEnv, writeProject, diskUsage, fmtMB, indexSource};

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`test:install: ${err.code === 'TFJS_NODE_RS_TEST_INSTALL' || err.code === 'TFJS_NODE_RS_PACK' ? err.message : err.stack}\n`);
    process.exitCode = 1;
  });
}
