'use strict';
// The GPU package's CUDA libraries: driver detection, the TFJS_NODE_RS_CUDA switch, the install
// step (fetched only with a driver or the switch, from the nvidia-*-cu12 wheels, linked into
// <root>/cuda), the loader's preloading by absolute path, its default log level, and (where this
// machine's cache holds the unpacked libraries) that a library preloaded by path is what a later
// dlopen by soname gets, which is how TF's own lookups find them.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const {cudaLibraryPaths, nvidiaDriver, cudaSwitch} = require('../js/cuda.js');
const {CUDA_WHEELS, GPU_PACKAGE} = require('../js/libtensorflow_facts.js');
const loader = require('../js/native_loader_core.js');
const setup = require('../scripts/libtensorflow.js');
const {scratchDirs, quietLog} = require('./support/scratch.js');
const {pyZip, needsPython} = require('./support/py_zip.js');

const tempDir = scratchDirs('tfjs-node-rs-cuda-test-');
const ROOT = path.resolve(__dirname, '..');

test('nvidiaDriver: the kernel module version, else libcuda.so.1, else none', () => {
  const dir = tempDir('driver');
  const versionFile = path.join(dir, 'version');
  fs.writeFileSync(versionFile, 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version: gcc 12\n');
  assert.deepEqual(nvidiaDriver({versionFile, libDirs: []}), {version: '550.54.15', where: versionFile});
  fs.writeFileSync(versionFile, 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n');
  assert.equal(nvidiaDriver({versionFile, libDirs: []}).version, '570.86.15');

  const libDir = path.join(dir, 'lib');
  fs.mkdirSync(libDir);
  const missing = path.join(dir, 'absent');
  assert.equal(nvidiaDriver({versionFile: missing, libDirs: [libDir]}), null);
  fs.writeFileSync(path.join(libDir, 'libcuda.so.1'), '');
  assert.deepEqual(nvidiaDriver({versionFile: missing, libDirs: [libDir]}), {version: null, where: path.join(libDir, 'libcuda.so.1')});
});

test('TFJS_NODE_RS_CUDA: 1 forces, 0 turns off, unset is automatic, anything else is refused', () => {
  assert.equal(cudaSwitch({}), 'auto');
  assert.equal(cudaSwitch({TFJS_NODE_RS_CUDA: ''}), 'auto');
  assert.equal(cudaSwitch({TFJS_NODE_RS_CUDA: '1'}), 'force');
  assert.equal(cudaSwitch({TFJS_NODE_RS_CUDA: '0'}), 'off');
  assert.throws(() => cudaSwitch({TFJS_NODE_RS_CUDA: 'yes'}), /TFJS_NODE_RS_CUDA=yes is not understood: use 1 .*, 0 /);
});

test('the CUDA libraries load in dependency order, from nvidia/<dir>/lib', () => {
  const names = cudaLibraryPaths('/x').map((p) => path.relative('/x', p));
  assert.equal(names[0], 'nvidia/nvjitlink/lib/libnvJitLink.so.12'); // cuSPARSE, cuFFT and cuSOLVER need it
  assert.equal(names.at(-1), 'nvidia/cudnn/lib/libcudnn.so.9');
  const at = (name) => names.findIndex((n) => n.endsWith(`/${name}`));
  assert.ok(at('libcublasLt.so.12') < at('libcublas.so.12'));
  assert.ok(at('libcusparse.so.12') < at('libcusolver.so.11') && at('libcublas.so.12') < at('libcusolver.so.11'));
  assert.ok(at('libnvrtc.so.12') < at('libcudnn_graph.so.9'));
  for (const name of ['libcudart.so.12', 'libcufft.so.11', 'libcudnn_engines_precompiled.so.9']) assert.ok(at(name) >= 0, name);
});

// A package root: package.json with `name`, and cuda/ when `cuda` is set.
function packageRoot(name, {cuda = false} = {}) {
  const root = tempDir('pkg');
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({name}));
  if (cuda) fs.mkdirSync(path.join(root, 'cuda'));
  return root;
}

const recordingBinding = (fail = null) => {
  const loaded = [];
  return {
    loaded,
    tfVersion: () => '2.21.0',
    preloadLibrary(file) {
      if (fail && file.endsWith(fail)) throw new Error(`cannot load ${file}: ${file}: cannot open shared object file: No such file or directory`);
      loaded.push(file);
    },
  };
};

const LINUX = {platform: 'linux', arch: 'x64', glibc: '2.36', napi: '9', node: 'v20.0.0'};

const DRIVER = {version: '550.54.15', where: '/proc/driver/nvidia/version'};

test('the loader preloads <root>/cuda\'s libraries after loading the addon where a driver is, or with TFJS_NODE_RS_CUDA=1', () => {
  const root = packageRoot(GPU_PACKAGE, {cuda: true});
  const loads = (env, driver, at = root) => {
    const binding = recordingBinding();
    loader.load({system: LINUX, provide: () => null, env, root: at, requireBinding: () => binding, driver: () => driver});
    return binding.loaded;
  };
  assert.deepEqual(loads({}, DRIVER), cudaLibraryPaths(path.join(root, 'cuda')));
  assert.deepEqual(loads({TFJS_NODE_RS_CUDA: '1'}, null), cudaLibraryPaths(path.join(root, 'cuda')));
  assert.deepEqual(loads({}, null), []); // node_modules moved to a machine without a driver
  assert.deepEqual(loads({TFJS_NODE_RS_CUDA: '0'}, DRIVER), []);
  assert.deepEqual(loads({}, DRIVER, packageRoot(GPU_PACKAGE)), []); // no cuda/
});

test('a CUDA library that does not load is one Error naming it, the repair and the way around', () => {
  const root = packageRoot(GPU_PACKAGE, {cuda: true});
  const binding = recordingBinding('libcublas.so.12');
  assert.throws(
    () => loader.load({system: LINUX, provide: () => null, env: {}, root, requireBinding: () => binding, driver: () => DRIVER}),
    (err) => {
      assert.equal(err.code, loader.ERROR_CODE);
      assert.match(err.message, /^tfjs-node-rs: the CUDA libraries in .*cuda are incomplete or damaged: cannot load .*libcublas\.so\.12/);
      assert.ok(err.message.includes(`node ${path.join(root, 'scripts', 'libtensorflow.js')}`), err.message);
      assert.match(err.message, /TFJS_NODE_RS_CUDA=0 to run on the CPU/);
      return true;
    },
  );
  assert.throws(() => loader.load({system: LINUX, provide: () => null, env: {TFJS_NODE_RS_CUDA: 'x'}, root, requireBinding: () => binding}),
    /^Error: tfjs-node-rs: TFJS_NODE_RS_CUDA=x is not understood/);
});

test('TF_CPP_MIN_LOG_LEVEL: 3 for the GPU package without a driver (TF\'s cuInit error line), else 2; a chosen level stays', () => {
  const level = (name, driver, env = {}) => {
    loader.load({system: LINUX, provide: () => null, env, root: packageRoot(name), requireBinding: () => recordingBinding(), driver: () => driver});
    return env.TF_CPP_MIN_LOG_LEVEL;
  };
  assert.equal(level(GPU_PACKAGE, null), '3');
  assert.equal(level(GPU_PACKAGE, DRIVER), '2');
  assert.equal(level('tfjs-node-rs', null), '2');
  assert.equal(level(GPU_PACKAGE, null, {TF_CPP_MIN_LOG_LEVEL: '0'}), '0');
});

// ---------------------------------------------------------------------------
// Install

test('the GPU package is Linux x64 only; its libtensorflow is the tensorflow wheel\'s CUDA build', async () => {
  const root = packageRoot(GPU_PACKAGE);
  assert.equal(setup._internal.packageVariant(root), 'gpu');
  assert.equal(setup._internal.packageVariant(packageRoot('tfjs-node-rs')), 'cpu');
  await assert.rejects(
    setup.ensureLibtensorflow({root, log: quietLog(), env: {HOME: tempDir('home')}, platform: {platform: 'linux', arch: 'arm64', glibc: '2.36'}}),
    /tfjs-node-rs-gpu \(TensorFlow with NVIDIA CUDA\) exists only for Linux x64; on linux-arm64 install tfjs-node-rs instead/,
  );
  const spec = setup._internal.wheelSpec('linux-x64-gpu');
  assert.ok(spec.re.test('tensorflow-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl'));
  assert.ok(!spec.re.test('tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl'));
});

test('without a driver the CUDA libraries are not fetched, and a cuda/ left from before is removed', async () => {
  const root = packageRoot(GPU_PACKAGE, {cuda: true});
  const log = quietLog();
  const env = {XDG_CACHE_HOME: tempDir('cache')};
  assert.equal(await setup._internal.ensureCuda({root, env, log, driver: null}), null);
  assert.ok(!fs.existsSync(path.join(root, 'cuda')));
  assert.match(log.lines.join('\n'), /no NVIDIA driver found .* not fetched, and TensorFlow runs on the CPU\. Once a driver is installed, the next require of the package fetches them \(or set TFJS_NODE_RS_CUDA=1/);
  assert.equal(await setup._internal.ensureCuda({root, env: {...env, TFJS_NODE_RS_CUDA: '0'}, log, driver: {version: '550.54.15', where: 'x'}}), null);
  assert.deepEqual(fs.readdirSync(env.XDG_CACHE_HOME), []); // nothing downloaded
  await assert.rejects(setup._internal.ensureCuda({root, env: {...env, TFJS_NODE_RS_CUDA: 'x'}, log, driver: null}),
    (err) => err.code === setup.SETUP_ERROR_CODE && /TFJS_NODE_RS_CUDA=x is not understood/.test(err.message));
});

// The CUDA wheels as the index has them, each holding its libraries (tiny) and what is not taken.
function fakeCudaWheels(cache) {
  fs.mkdirSync(cache, {recursive: true});
  for (const w of CUDA_WHEELS) {
    const name = `${w.project.replace(/-/g, '_')}-${w.version}-py3-none-manylinux2014_x86_64.whl`;
    pyZip(path.join(cache, name), [
      [`nvidia/${w.dir}/__init__.py`, ''],
      [`nvidia/${w.dir}/lib/__init__.py`, ''],
      ...w.libs.map((lib) => [`nvidia/${w.dir}/lib/${lib}`, `${w.project} ${lib}`]),
      [`nvidia/${w.dir}/include/${w.dir}.h`, 'header'],
    ]);
  }
}

test('with a driver (or TFJS_NODE_RS_CUDA=1) the wheels are unpacked once into the shared copy, and cuda/ links to it', needsPython, async () => {
  const base = tempDir('cache');
  const env = {XDG_CACHE_HOME: base, PIP_INDEX_URL: 'http://127.0.0.1:9/simple/'}; // cached wheels only
  fakeCudaWheels(path.join(base, 'tfjs-node-rs'));
  const first = packageRoot(GPU_PACKAGE);
  const link = await setup._internal.ensureCuda({root: first, env, log: quietLog(), driver: {version: '550.54.15', where: 'x'}});
  const shared = setup.sharedCudaDir(env);
  assert.equal(fs.readlinkSync(link), shared);
  for (const lib of cudaLibraryPaths(link)) {
    const w = CUDA_WHEELS.find((x) => lib.includes(`/nvidia/${x.dir}/lib/`));
    assert.equal(fs.readFileSync(lib, 'utf8'), `${w.project} ${path.basename(lib)}`);
  }
  assert.deepEqual(fs.readdirSync(path.join(shared, 'nvidia', 'cudnn')), ['lib']); // only the libraries
  assert.ok(setup._internal.isCudaComplete(shared));

  const second = packageRoot(GPU_PACKAGE);
  const log = quietLog();
  await setup._internal.ensureCuda({root: second, env: {...env, TFJS_NODE_RS_CUDA: '1'}, log, driver: null});
  assert.equal(fs.readlinkSync(path.join(second, 'cuda')), shared);
  assert.doesNotMatch(log.lines.join('\n'), /extracted/); // the shared copy was complete

  const old = quietLog();
  await setup._internal.ensureCuda({root: second, env, log: old, driver: {version: '470.82.01', where: 'x'}});
  assert.match(old.lines.join('\n'), /warning: NVIDIA driver 470\.82\.01 is older than 525\.60\.13, .*runs on the CPU until the driver is updated/);

  const copied = packageRoot(GPU_PACKAGE);
  await setup._internal.ensureCuda({root: copied, env: {...env, TFJS_NODE_RS_CUDA: '1'}, log, driver: null, copy: true});
  assert.ok(!fs.lstatSync(path.join(copied, 'cuda')).isSymbolicLink());
  assert.ok(setup._internal.isCudaComplete(path.join(copied, 'cuda')));

  // A library gone from the shared copy: it is unpacked again.
  fs.rmSync(cudaLibraryPaths(shared)[3]);
  assert.ok(!setup._internal.isCudaComplete(shared));
  await setup._internal.ensureCuda({root: first, env, log: quietLog(), driver: {version: null, where: 'x'}});
  assert.ok(setup._internal.isCudaComplete(shared));
});

// ---------------------------------------------------------------------------
// The real libraries (this machine's shared copy, when an install with TFJS_NODE_RS_CUDA=1 made it).

const realCuda = setup.sharedCudaDir();
const built = path.join(ROOT, loader.ADDON_FILE);
const haveReal = setup._internal.isCudaComplete(realCuda) && fs.existsSync(built);

test('a CUDA library preloaded by path is what a later dlopen by its soname gets', {skip: !haveReal && 'no unpacked CUDA libraries in the cache (TFJS_NODE_RS_CUDA=1 npm run test:gpu-on-cpu makes them)'}, () => {
  const code = `
    const binding = require(${JSON.stringify(built)});
    const bySoname = (name) => { try { binding.preloadLibrary(name); return 'found'; } catch (e) { return e.message; } };
    const before = bySoname('libcudart.so.12');
    for (const lib of ${JSON.stringify(cudaLibraryPaths(realCuda))}) binding.preloadLibrary(lib);
    const after = ['libcudart.so.12', 'libcublas.so.12', 'libcudnn.so.9', 'libcusolver.so.11'].map(bySoname);
    const maps = require('fs').readFileSync('/proc/self/maps', 'utf8');
    console.log(JSON.stringify({before, after, mapped: ${JSON.stringify(cudaLibraryPaths(realCuda))}.filter((l) => maps.includes(l)).length}));
  `;
  const res = spawnSync(process.execPath, ['-e', code], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: ''}});
  assert.equal(res.status, 0, res.stderr);
  const out = JSON.parse(res.stdout.trim().split('\n').pop());
  assert.match(out.before, /libcudart\.so\.12: cannot open shared object file/);
  assert.deepEqual(out.after, ['found', 'found', 'found', 'found']);
  assert.equal(out.mapped, cudaLibraryPaths(realCuda).length);
});

test('the GPU package\'s load errors name its own set-up script', () => {
  const root = packageRoot(GPU_PACKAGE);
  const err = loader.explainLoadError(new Error('libtensorflow_cc.so.2: cannot open shared object file: No such file or directory'), {root, env: {}});
  assert.match(err.message, /^tfjs-node-rs: libtensorflow is missing/);
  assert.ok(err.message.includes(`run \`node ${path.join(root, 'scripts', 'libtensorflow.js')}\``), err.message);
  assert.doesNotMatch(err.message, /\bpip\b|npm rebuild/);
});
