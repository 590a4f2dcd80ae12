'use strict';
// Tests for the setup scripts (scripts/libtensorflow.js, scripts/build.js):
// the zip reader, and ensureLibtensorflow over temporary roots with fake
// libraries, fake wheels and a fake python3. Never touches the repository's deps/.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {spawn, spawnSync} = require('node:child_process');

const setup = require('../scripts/libtensorflow.js');
const {build, buildEnv} = require('../scripts/build.js');
const {scratchDirs, quietLog} = require('./support/scratch.js');

const {listZip, extractZip, wheelTarget, checkPlatform, ZIP_CORRUPT} = setup._internal;
const WHEEL_NAME = 'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl';
const ARM64_WHEEL_NAME = 'tensorflow-2.21.0-cp311-cp311-manylinux_2_27_aarch64.whl';
const PLATFORM = {platform: 'linux', arch: 'x64', glibc: '2.35'};
const {pyZip, needsPython} = require('./support/py_zip.js');

const tempDir = scratchDirs('tfjs-node-rs-setup-test-');

const identity = (name) => name;

// ---------------------------------------------------------------------------
// Zip reader

test('extractZip: stored, deflated, empty, nested and non-ASCII entries', needsPython, async () => {
  const dir = tempDir('zip');
  const big = crypto.randomBytes(1024 * 1024);
  const text = 'TensorFlow '.repeat(50000);
  const zip = pyZip(path.join(dir, 'a.zip'), [
    ['top/', ''],
    ['top/big.bin', big, 'deflated'],
    ['top/stored.bin', big.subarray(0, 4096), 'stored'],
    ['top/text.txt', text, 'deflated'],
    ['top/empty.txt', '', 'deflated'],
    ['top/deep/er/é.h', 'x', 'stored'],
  ]);
  const out = path.join(dir, 'out');
  const written = await extractZip(zip, out, identity);
  assert.equal(written.length, 5); // folders are skipped
  assert.deepEqual(fs.readFileSync(path.join(out, 'top/big.bin')), big);
  assert.deepEqual(fs.readFileSync(path.join(out, 'top/stored.bin')), big.subarray(0, 4096));
  assert.equal(fs.readFileSync(path.join(out, 'top/text.txt'), 'utf8'), text);
  assert.equal(fs.readFileSync(path.join(out, 'top/empty.txt'), 'utf8'), '');
  assert.equal(fs.readFileSync(path.join(out, 'top/deep/er/é.h'), 'utf8'), 'x');
});

test('extractZip: only the entries the filter maps, to the mapped paths', needsPython, async () => {
  const dir = tempDir('zip');
  const zip = pyZip(path.join(dir, 'a.zip'), [['a/keep.h', 'k'], ['a/drop.h', 'd']]);
  const out = path.join(dir, 'out');
  await extractZip(zip, out, (n) => (n === 'a/keep.h' ? 'x/y/kept.h' : null));
  assert.equal(fs.readFileSync(path.join(out, 'x/y/kept.h'), 'utf8'), 'k');
  assert.ok(!fs.existsSync(path.join(out, 'a')));
});

test('listZip: ZIP64 end-of-central-directory (more than 65535 entries)', needsPython, async () => {
  const dir = tempDir('zip64');
  const zip = path.join(dir, 'many.zip');
  const res = spawnSync('python3', ['-c', [
    'import sys, zipfile',
    'with zipfile.ZipFile(sys.argv[1], "w") as z:',
    '    for i in range(65600): z.writestr("d/%d" % i, b"")',
    '    z.writestr("last.txt", b"hello")',
  ].join('\n'), zip]);
  assert.equal(res.status, 0, String(res.stderr));
  const entries = listZip(zip);
  assert.equal(entries.length, 65601);
  await extractZip(zip, path.join(dir, 'out'), (n) => (n === 'last.txt' ? n : null));
  assert.equal(fs.readFileSync(path.join(dir, 'out', 'last.txt'), 'utf8'), 'hello');
});

// A one-entry stored zip whose central directory keeps sizes and offset in a
// ZIP64 extra field (as archives over 4 GiB do), written by hand.
function zip64ExtraZip(name, data) {
  const nameBuf = Buffer.from(name);
  const crc = zlibCrc(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(45, 4);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(nameBuf.length, 26);
  const extra = Buffer.alloc(4 + 24);
  extra.writeUInt16LE(0x0001, 0);
  extra.writeUInt16LE(24, 2);
  extra.writeBigUInt64LE(BigInt(data.length), 4); // uncompressed
  extra.writeBigUInt64LE(BigInt(data.length), 12); // compressed
  extra.writeBigUInt64LE(0n, 20); // local header offset
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE((3 << 8) | 45, 4);
  central.writeUInt16LE(45, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(0xffffffff, 20);
  central.writeUInt32LE(0xffffffff, 24);
  central.writeUInt16LE(nameBuf.length, 28);
  central.writeUInt16LE(extra.length, 30);
  central.writeUInt32LE(0xffffffff, 42);
  const cd = Buffer.concat([central, nameBuf, extra]);
  const cdOffset = local.length + nameBuf.length + data.length;
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(1, 8);
  eocd.writeUInt16LE(1, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, nameBuf, data, cd, eocd]);
}

function zlibCrc(data) {
  const zlib = require('node:zlib');
  if (typeof zlib.crc32 === 'function') return zlib.crc32(data);
  let c = ~0;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

test('listZip/extractZip: sizes and offset from a ZIP64 extra field', async () => {
  const dir = tempDir('zip64x');
  const zip = path.join(dir, 'x.zip');
  fs.writeFileSync(zip, zip64ExtraZip('lib.so', Buffer.from('zip64 payload')));
  const [entry] = listZip(zip);
  assert.equal(entry.size, 13);
  assert.equal(entry.compressedSize, 13);
  assert.equal(entry.localOffset, 0);
  await extractZip(zip, path.join(dir, 'out'), identity);
  assert.equal(fs.readFileSync(path.join(dir, 'out', 'lib.so'), 'utf8'), 'zip64 payload');
});

test('extractZip: unreadable archives fail with the corrupt-zip code', needsPython, async () => {
  const dir = tempDir('bad');
  const data = crypto.randomBytes(200000);
  const good = pyZip(path.join(dir, 'good.zip'), [['f.bin', data, 'stored'], ['g.txt', 'hello '.repeat(1000)]]);
  const bytes = fs.readFileSync(good);

  const notZip = path.join(dir, 'not.zip');
  fs.writeFileSync(notZip, 'this is not a zip file at all, just text');
  await assert.rejects(extractZip(notZip, path.join(dir, 'o1'), identity), {code: ZIP_CORRUPT});

  const truncated = path.join(dir, 'truncated.zip');
  fs.writeFileSync(truncated, bytes.subarray(0, bytes.length - 100));
  await assert.rejects(extractZip(truncated, path.join(dir, 'o2'), identity), {code: ZIP_CORRUPT});

  const flipped = Buffer.from(bytes);
  flipped[1000] ^= 0xff; // inside f.bin's stored data: the CRC-32 (or size) check must catch it
  const flippedFile = path.join(dir, 'flipped.zip');
  fs.writeFileSync(flippedFile, flipped);
  await assert.rejects(extractZip(flippedFile, path.join(dir, 'o3'), identity), {code: ZIP_CORRUPT});

  await assert.rejects(extractZip(good, path.join(dir, 'o4'), () => '../escape'), {code: ZIP_CORRUPT});

  // A write failure (here: the target is a folder) is a file system error, not a
  // corrupt archive: the cached wheel must not be deleted for it.
  const o5 = path.join(dir, 'o5');
  fs.mkdirSync(path.join(o5, 'f.bin'), {recursive: true});
  await assert.rejects(extractZip(good, o5, (n) => (n === 'f.bin' ? n : null)), (err) => {
    assert.notEqual(err.code, ZIP_CORRUPT);
    assert.equal(err.code, 'EISDIR');
    return true;
  });
});

test('wheelTarget: keeps the libs and the C API headers only', () => {
  assert.equal(wheelTarget('tensorflow/libtensorflow_cc.so.2'), 'lib/libtensorflow_cc.so.2');
  assert.equal(wheelTarget('tensorflow/libtensorflow_framework.so.2'), 'lib/libtensorflow_framework.so.2');
  assert.equal(wheelTarget('tensorflow/include/tensorflow/c/c_api.h'), 'include/tensorflow/c/c_api.h');
  assert.equal(wheelTarget('tensorflow/include/tensorflow/c/eager/c_api.h'), 'include/tensorflow/c/eager/c_api.h');
  assert.equal(wheelTarget('tensorflow/include/tsl/platform/ctstring.h'), 'include/tsl/platform/ctstring.h');
  assert.equal(
    wheelTarget('tensorflow/include/tensorflow/core/platform/ctstring_internal.h'),
    'include/tensorflow/core/platform/ctstring_internal.h',
  );
  assert.equal(wheelTarget('tensorflow/include/xla/tsl/c/tsl_status.h'), 'include/xla/tsl/c/tsl_status.h');
  assert.equal(
    wheelTarget('tensorflow/include/tensorflow/compiler/xla/tsl/c/tsl_status.h'),
    'include/tensorflow/compiler/xla/tsl/c/tsl_status.h',
  );
  // What c/kernels.h includes from outside tensorflow/c/, for op libraries.
  assert.equal(wheelTarget('tensorflow/include/tsl/platform/platform.h'), 'include/tsl/platform/platform.h');
  const rendezvous = 'tensorflow/core/common_runtime/next_pluggable_device/c/tf_rendezvous_c_api.h';
  assert.equal(wheelTarget(`tensorflow/include/${rendezvous}`), `include/${rendezvous}`);
  for (const no of [
    'tensorflow/include/tensorflow/core/framework/tensor.h',
    'tensorflow/include/tsl/platform/env.h',
    'tensorflow/include/tensorflow/c/',
    'tensorflow/python/libtensorflow_cc.so.2',
    'tensorflow/libtensorflow_cc.so.2.21.0',
    'tensorflow/include/tensorflow/c/../../../../etc/passwd',
  ]) {
    assert.equal(wheelTarget(no), null, no);
  }
});

test('wheelTarget: the Windows wheel\'s DLL comes from tensorflow/python/', () => {
  const {LIBRARIES} = require('../js/libtensorflow_facts.js');
  const dll = '_pywrap_tensorflow_common.dll';
  assert.equal(wheelTarget(`tensorflow/python/${dll}`, LIBRARIES.win32), `lib/${dll}`);
  assert.equal(wheelTarget(`tensorflow/${dll}`, LIBRARIES.win32), null);
  assert.equal(wheelTarget('tensorflow/python/libtensorflow_cc.so.2', LIBRARIES.linux), null);
  assert.equal(wheelTarget('tensorflow/include/tensorflow/c/c_api.h', LIBRARIES.win32), 'include/tensorflow/c/c_api.h');
  assert.match('tensorflow_cpu-2.21.0-cp311-cp311-win_amd64.whl', setup._internal.wheelSpec('win32-x64').re);
});

test('checkPlatform: Linux x64 and arm64 with glibc >= 2.27, and macOS arm64', () => {
  assert.equal(checkPlatform({platform: 'linux', arch: 'x64', glibc: '2.27'}), 'linux-x64');
  assert.equal(checkPlatform({platform: 'linux', arch: 'x64', glibc: '2.35'}), 'linux-x64');
  assert.equal(checkPlatform({platform: 'linux', arch: 'arm64', glibc: '2.27'}), 'linux-arm64');
  assert.equal(checkPlatform({platform: 'darwin', arch: 'arm64'}), 'darwin-arm64');
  const cases = [
    [{platform: 'darwin', arch: 'x64'}, /platform=darwin, arch=x64/],
    [{platform: 'linux', arch: 'arm', glibc: '2.35'}, /arch=arm, libc=glibc 2\.35/],
    [{platform: 'linux', arch: 'arm64', glibc: '2.17'}, /needs glibc >= 2\.27.*arch=arm64, libc=glibc 2\.17/],
    [{platform: 'linux', arch: 'x64', glibc: undefined}, /libc=not glibc/],
    [{platform: 'linux', arch: 'x64', glibc: '2.17'}, /needs glibc >= 2\.27.*glibc 2\.17/],
  ];
  for (const [p, re] of cases) {
    assert.throws(() => checkPlatform(p), (err) => {
      assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
      assert.match(err.message, /^unsupported platform: tfjs-node-rs has prebuilt binaries only for Linux x64 with glibc >= 2\.27 \(x86_64-unknown-linux-gnu\)|needs glibc/);
      assert.match(err.message, re);
      return true;
    });
  }
});

// ---------------------------------------------------------------------------
// ensureLibtensorflow

// Nothing listens on port 9 of 127.0.0.1: the index client fails at once (tests of
// the index client itself are in pypi.test.js), and the real index is never asked.
const DEAD_INDEX = 'http://127.0.0.1:9/simple/';

function baseEnv(extra = {}) {
  const env = {PATH: process.env.PATH, HOME: tempDir('home'), PIP_INDEX_URL: DEAD_INDEX, ...extra};
  return env;
}

// ensureLibtensorflow without the index client's waits between retries.
function ensure(opts) {
  return setup.ensureLibtensorflow({index: {retries: 0}, ...opts});
}

function fakeTensorflowDir({headers = true} = {}) {
  const dir = tempDir('tf');
  fs.writeFileSync(path.join(dir, 'libtensorflow_cc.so.2'), 'fake cc library');
  fs.writeFileSync(path.join(dir, 'libtensorflow_framework.so.2'), 'fake framework library');
  if (headers) {
    for (const rel of [
      'tensorflow/c/c_api.h',
      'tensorflow/c/eager/c_api.h',
      'tsl/platform/ctstring.h',
      'tensorflow/core/platform/ctstring.h',
      'xla/tsl/c/tsl_status.h',
      'tensorflow/core/framework/tensor.h', // not wanted
    ]) {
      const f = path.join(dir, 'include', rel);
      fs.mkdirSync(path.dirname(f), {recursive: true});
      fs.writeFileSync(f, `// ${rel}\n`);
    }
  }
  return dir;
}

function fakeWheel(file) {
  return pyZip(file, [
    ['tensorflow/', ''],
    ['tensorflow/__init__.py', '# fake'],
    ['tensorflow/libtensorflow_cc.so.2', 'cc '.repeat(10000)],
    ['tensorflow/libtensorflow_framework.so.2', 'fw '.repeat(5000)],
    ['tensorflow/include/tensorflow/c/', ''],
    ['tensorflow/include/tensorflow/c/c_api.h', '// c_api.h\n'],
    ['tensorflow/include/tensorflow/c/eager/c_api.h', '// eager\n'],
    ['tensorflow/include/tsl/platform/ctstring.h', '// tsl ctstring\n'],
    ['tensorflow/include/tensorflow/core/platform/ctstring.h', '// core ctstring\n'],
    ['tensorflow/include/xla/tsl/c/tsl_status.h', '// tsl_status\n'],
    ['tensorflow/include/tensorflow/core/framework/tensor.h', '// not wanted\n'],
  ]);
}

let goodWheel;
function goodWheelFile() {
  if (!goodWheel) goodWheel = fakeWheel(path.join(tempDir('wheel'), WHEEL_NAME));
  return goodWheel;
}

// A directory with a fake `python3`: `-m pip --version` works, and `pip download`
// copies FAKE_WHEEL into the -d folder (or fails, per FAKE_PIP).
function fakePythonBin() {
  const bin = tempDir('bin');
  const script = [
    `#!${process.execPath}`,
    "const fs = require('fs'), path = require('path');",
    'const args = process.argv.slice(2);',
    "fs.appendFileSync(process.env.FAKE_PIP_LOG, JSON.stringify(args) + '\\n');",
    "if (process.env.FAKE_PIP === 'nopip') { console.error('/usr/bin/python3: No module named pip'); process.exit(1); }",
    "if (args.includes('--version')) { console.log('pip 99.0 (fake)'); process.exit(0); }",
    "if (process.env.FAKE_PIP === 'fail') {",
    "  console.error('ERROR: Could not find a version that satisfies the requirement tensorflow-cpu==2.21.0');",
    "  console.error('ERROR: No matching distribution found for tensorflow-cpu==2.21.0');",
    '  process.exit(1);',
    '}',
    "const d = args[args.indexOf('-d') + 1];",
    'fs.mkdirSync(d, { recursive: true });',
    'fs.copyFileSync(process.env.FAKE_WHEEL, path.join(d, path.basename(process.env.FAKE_WHEEL)));',
  ].join('\n');
  fs.writeFileSync(path.join(bin, 'python3'), script, {mode: 0o755});
  return bin;
}

function pipCalls(logFile) {
  if (!fs.existsSync(logFile)) return [];
  return fs.readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

// deps/ is a complete tree of the given kind; made from a wheel, it is a link to
// the shared copy (unless copied).
function assertDeps(root, {kind, copied = false}) {
  const deps = path.join(root, 'deps');
  const linked = kind === 'wheel' && !copied;
  assert.equal(fs.lstatSync(deps).isSymbolicLink(), linked);
  // The tree the pkg-config file and the marker describe.
  const tree = linked ? fs.readlinkSync(deps) : deps;
  const lib = path.join(tree, 'lib');
  assert.equal(fs.readlinkSync(path.join(lib, 'libtensorflow.so')), 'libtensorflow_cc.so.2');
  assert.ok(fs.statSync(path.join(lib, 'libtensorflow.so')).size > 0);
  const pc = fs.readFileSync(path.join(lib, 'pkgconfig', 'tensorflow.pc'), 'utf8');
  assert.match(pc, /^Name: tensorflow$/m);
  assert.match(pc, /^Version: 2\.21\.0$/m);
  assert.match(pc, /^Libs: -L\$\{libdir\} -ltensorflow$/m);
  assert.ok(pc.includes(`libdir=${lib}\n`), pc);
  assert.ok(pc.includes(`includedir=${path.join(tree, 'include')}\n`), pc);
  assert.match(pc, /^Cflags: -I\$\{includedir\}$/m);
  const marker = JSON.parse(fs.readFileSync(path.join(deps, '.complete'), 'utf8'));
  assert.equal(marker.version, '2.21.0');
  assert.equal(marker.kind, kind);
  assert.ok(marker.source);
  assert.equal(fs.readFileSync(path.join(deps, 'include/tensorflow/c/c_api.h'), 'utf8').length > 0, true);
  assert.ok(fs.existsSync(path.join(deps, 'include/tensorflow/c/eager/c_api.h')));
  assert.ok(fs.existsSync(path.join(deps, 'include/tsl/platform/ctstring.h')));
  assert.ok(fs.existsSync(path.join(deps, 'include/tensorflow/core/platform/ctstring.h')));
  assert.ok(fs.existsSync(path.join(deps, 'include/xla/tsl/c/tsl_status.h')));
  assert.ok(!fs.existsSync(path.join(deps, 'include/tensorflow/core/framework')));
  // No temporaries left next to deps/.
  assert.deepEqual(fs.readdirSync(root).filter((n) => n.startsWith('deps.')), []);
  return marker;
}

test('TFJS_NODE_RS_LIBTENSORFLOW: libs symlinked, headers copied', async () => {
  const tf = fakeTensorflowDir();
  const root = tempDir('root');
  const r = await ensure({
    root, log: quietLog(), env: baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf}), platform: PLATFORM,
  });
  assert.equal(r.fresh, true);
  assert.equal(r.lib, setup.libtensorflowDir(root));
  const marker = assertDeps(root, {kind: 'directory'});
  assert.equal(marker.source, tf);
  for (const lib of ['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2']) {
    assert.equal(fs.readlinkSync(path.join(root, 'deps/lib', lib)), path.join(tf, lib));
  }
  assert.equal(fs.readFileSync(path.join(root, 'deps/lib/libtensorflow.so'), 'utf8'), 'fake cc library');
});

test('TFJS_NODE_RS_LIBTENSORFLOW without the libs: one clear error, no deps/', async () => {
  const tf = tempDir('empty-tf');
  fs.writeFileSync(path.join(tf, 'libtensorflow_cc.so.2'), 'only one');
  const root = tempDir('root');
  await assert.rejects(
    ensure({
      root, log: quietLog(), env: baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf}), platform: PLATFORM,
    }),
    (err) => {
      assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
      assert.match(err.message, /^TFJS_NODE_RS_LIBTENSORFLOW=.* does not hold libtensorflow_framework\.so\.2\./);
      assert.doesNotMatch(err.message, /does not hold libtensorflow_cc/);
      return true;
    },
  );
  assert.deepEqual(fs.readdirSync(root), []);
});

test('fast path: a complete deps/ is left alone, quickly', async () => {
  const tf = fakeTensorflowDir();
  const root = tempDir('root');
  const env = baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf});
  await ensure({root, log: quietLog(), env, platform: PLATFORM});
  const markerFile = path.join(root, 'deps/.complete');
  const before = fs.statSync(markerFile).mtimeMs;
  const log = quietLog();
  const t0 = process.hrtime.bigint();
  const r = await ensure({root, log, env, platform: PLATFORM});
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(r.fresh, false);
  assert.ok(ms < 50, `fast path took ${ms} ms`);
  assert.deepEqual(log.lines, []);
  assert.equal(fs.statSync(markerFile).mtimeMs, before);
  // Also without the variable: a deps/ made from a directory stays valid.
  const r2 = await ensure({root, log, env: baseEnv(), platform: PLATFORM});
  assert.equal(r2.fresh, false);
});

test('repair: deps/ without .complete, with a wrong-size lib, or a stale temp dir', async () => {
  const tf = fakeTensorflowDir();
  const root = tempDir('root');
  const env = baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf});
  // A half-finished deps/, as a run killed midway (or made by hand) leaves it.
  fs.mkdirSync(path.join(root, 'deps/lib'), {recursive: true});
  fs.writeFileSync(path.join(root, 'deps/lib/libtensorflow_cc.so.2'), 'half');
  fs.mkdirSync(path.join(root, 'deps.tmp-99999999/lib'), {recursive: true});
  let r = await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  assertDeps(root, {kind: 'directory'});

  // .complete removed: rebuilt.
  fs.rmSync(path.join(root, 'deps/.complete'));
  r = await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  assertDeps(root, {kind: 'directory'});

  // A library whose size differs from the one recorded: rebuilt.
  fs.appendFileSync(path.join(tf, 'libtensorflow_cc.so.2'), ' grown');
  r = await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  assertDeps(root, {kind: 'directory'});

  // The variable now names another directory: rebuilt from it.
  const tf2 = fakeTensorflowDir({headers: false});
  r = await ensure({
    root, log: quietLog(), env: baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf2}), platform: PLATFORM,
  });
  assert.equal(r.fresh, true);
  assert.equal(fs.readlinkSync(path.join(root, 'deps/lib/libtensorflow_cc.so.2')), path.join(tf2, 'libtensorflow_cc.so.2'));
});

test('a moved checkout gets its pkg-config paths rewritten', async () => {
  const tf = fakeTensorflowDir();
  const first = tempDir('root');
  const env = baseEnv({TFJS_NODE_RS_LIBTENSORFLOW: tf});
  await ensure({root: first, log: quietLog(), env, platform: PLATFORM});
  const moved = `${first}-moved`;
  fs.renameSync(first, moved);
  const r = await ensure({root: moved, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, false);
  assertDeps(moved, {kind: 'directory'});
});

test('wheel in the download cache: extracted without pip', needsPython, async () => {
  const cache = tempDir('xdg');
  fs.mkdirSync(path.join(cache, 'tfjs-node-rs'));
  fs.copyFileSync(goodWheelFile(), path.join(cache, 'tfjs-node-rs', WHEEL_NAME));
  const root = tempDir('root');
  const env = baseEnv({XDG_CACHE_HOME: cache, PATH: tempDir('empty-path')}); // no python3 reachable
  assert.equal(setup.cacheDir(env), path.join(cache, 'tfjs-node-rs'));
  const r = await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  const marker = assertDeps(root, {kind: 'wheel'});
  assert.equal(marker.source, path.join(cache, 'tfjs-node-rs', WHEEL_NAME));
  assert.equal(fs.readFileSync(path.join(root, 'deps/lib/libtensorflow_cc.so.2'), 'utf8'), 'cc '.repeat(10000));
  assert.ok(!fs.lstatSync(path.join(root, 'deps/lib/libtensorflow_cc.so.2')).isSymbolicLink());
});

test('no wheel cached: downloaded with pip (fake python3), then cached', needsPython, async () => {
  const cache = tempDir('xdg');
  const pipLog = path.join(tempDir('piplog'), 'calls');
  const env = baseEnv({
    XDG_CACHE_HOME: cache,
    PATH: fakePythonBin(),
    FAKE_WHEEL: goodWheelFile(),
    FAKE_PIP_LOG: pipLog,
  });
  const root = tempDir('root');
  await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assertDeps(root, {kind: 'wheel'});
  const calls = pipCalls(pipLog);
  const download = calls.find((c) => c.includes('download'));
  assert.ok(download, JSON.stringify(calls));
  for (const arg of ['--no-deps', '--only-binary=:all:', 'tensorflow-cpu==2.21.0', 'manylinux_2_27_x86_64', 'cp311']) {
    assert.ok(download.includes(arg), `${arg} missing from ${download}`);
  }
  assert.ok(fs.existsSync(path.join(cache, 'tfjs-node-rs', WHEEL_NAME)));
  assert.deepEqual(fs.readdirSync(path.join(cache, 'tfjs-node-rs')).sort(), ['libtensorflow-2.21.0-linux-x64', WHEEL_NAME]);
});

test('each platform takes its own wheel from an index listing', () => {
  const {pickWheel, wheelSpec} = setup._internal;
  const file = (filename) => ({filename});
  const listing = [
    'tensorflow-2.21.0-cp310-cp310-manylinux_2_27_aarch64.whl',
    'tensorflow-2.21.0-cp311-cp311-manylinux_2_27_aarch64.whl',
    'tensorflow-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl',
    'tensorflow-2.21.0rc1-cp311-cp311-manylinux_2_27_aarch64.whl',
    'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl',
    'tensorflow_cpu-2.21.0-cp311-cp311-win_amd64.whl',
  ].map(file);
  assert.equal(pickWheel(listing, wheelSpec('linux-arm64')).filename, 'tensorflow-2.21.0-cp311-cp311-manylinux_2_27_aarch64.whl');
  assert.equal(pickWheel(listing, wheelSpec('linux-x64')).filename, 'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl');
  // The x64 CPU build is tensorflow-cpu's: the plain tensorflow wheel for x86_64 (CUDA-enabled) is never taken.
  assert.equal(pickWheel(listing.slice(0, 4), wheelSpec('linux-x64')), null);
  assert.equal(pickWheel([file('tensorflow-2.21.0-cp310-cp310-manylinux_2_27_aarch64.whl')], wheelSpec('linux-arm64')).filename,
    'tensorflow-2.21.0-cp310-cp310-manylinux_2_27_aarch64.whl');
});

test('Linux arm64: pip fetches the aarch64 tensorflow wheel, unpacked into a shared copy of its own', needsPython, async () => {
  const cache = tempDir('xdg');
  fs.mkdirSync(path.join(cache, 'tfjs-node-rs'));
  // This machine's x64 wheel in the cache does not serve arm64.
  fs.copyFileSync(goodWheelFile(), path.join(cache, 'tfjs-node-rs', WHEEL_NAME));
  const arm64Wheel = path.join(tempDir('wheel'), ARM64_WHEEL_NAME);
  fs.copyFileSync(goodWheelFile(), arm64Wheel);
  const pipLog = path.join(tempDir('piplog'), 'calls');
  const env = baseEnv({XDG_CACHE_HOME: cache, PATH: fakePythonBin(), FAKE_WHEEL: arm64Wheel, FAKE_PIP_LOG: pipLog});
  const root = tempDir('root');
  await ensure({root, log: quietLog(), env, platform: {platform: 'linux', arch: 'arm64', glibc: '2.36'}});
  const marker = assertDeps(root, {kind: 'wheel'});
  const download = pipCalls(pipLog).find((c) => c.includes('download'));
  for (const arg of ['tensorflow==2.21.0', 'manylinux_2_27_aarch64', 'cp311']) {
    assert.ok(download.includes(arg), `${arg} missing from ${download}`);
  }
  const shared = path.join(cache, 'tfjs-node-rs', 'libtensorflow-2.21.0-linux-arm64');
  assert.equal(setup.sharedDir(env, 'linux-arm64'), shared);
  assert.equal(fs.readlinkSync(path.join(root, 'deps')), shared);
  assert.equal(marker.source, path.join(cache, 'tfjs-node-rs', ARM64_WHEEL_NAME));
  assert.deepEqual(fs.readdirSync(path.join(cache, 'tfjs-node-rs')).sort(), ['libtensorflow-2.21.0-linux-arm64', ARM64_WHEEL_NAME, WHEEL_NAME]);
});

test('corrupt cached wheel: deleted and downloaded again once', needsPython, async () => {
  const cache = tempDir('xdg');
  fs.mkdirSync(path.join(cache, 'tfjs-node-rs'));
  const cached = path.join(cache, 'tfjs-node-rs', WHEEL_NAME);
  fs.writeFileSync(cached, fs.readFileSync(goodWheelFile()).subarray(0, 500)); // truncated download
  const pipLog = path.join(tempDir('piplog'), 'calls');
  const env = baseEnv({
    XDG_CACHE_HOME: cache, PATH: fakePythonBin(), FAKE_WHEEL: goodWheelFile(), FAKE_PIP_LOG: pipLog,
  });
  const root = tempDir('root');
  const log = quietLog();
  await ensure({root, log, env, platform: PLATFORM});
  assertDeps(root, {kind: 'wheel'});
  assert.ok(log.lines.some((l) => /unreadable.*downloading again/.test(l)), log.lines.join('\n'));
  assert.equal(pipCalls(pipLog).filter((c) => c.includes('download')).length, 1);
  assert.deepEqual(fs.readFileSync(cached), fs.readFileSync(goodWheelFile()));
});

test('a downloaded wheel that is corrupt too: error, and it is deleted', needsPython, async () => {
  const cache = tempDir('xdg');
  const bad = path.join(tempDir('badwheel'), WHEEL_NAME);
  fs.writeFileSync(bad, 'garbage');
  const env = baseEnv({
    XDG_CACHE_HOME: cache, PATH: fakePythonBin(), FAKE_WHEEL: bad,
    FAKE_PIP_LOG: path.join(tempDir('piplog'), 'calls'),
  });
  const root = tempDir('root');
  await assert.rejects(ensure({root, log: quietLog(), env, platform: PLATFORM}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /downloaded wheel .* is unreadable .*it was deleted/);
    return true;
  });
  assert.deepEqual(fs.readdirSync(path.join(cache, 'tfjs-node-rs')), []);
  assert.deepEqual(fs.readdirSync(root), []);
});

test('buildEnv: a cross build gets the target\'s linker and pkg-config, a native one neither', () => {
  const root = '/repo';
  const env = {PATH: process.env.PATH, HOME: '/home/u'};
  const native = buildEnv(root, env);
  assert.equal(native.PKG_CONFIG_PATH, '/repo/deps/lib/pkgconfig');
  assert.deepEqual(Object.keys(native).filter((k) => /aarch64|AARCH64/.test(k)), []);
  const cross = buildEnv(root, env, {target: 'aarch64-unknown-linux-gnu', shared: '/cache/libtensorflow-2.21.0-linux-arm64'});
  assert.equal(cross.CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER, 'aarch64-linux-gnu-gcc');
  // tensorflow-sys's pkg-config step reads the target's variables first; deps/ (x64) stays the host's.
  assert.equal(cross.PKG_CONFIG_PATH_aarch64_unknown_linux_gnu, '/cache/libtensorflow-2.21.0-linux-arm64/lib/pkgconfig');
  assert.equal(cross.PKG_CONFIG_ALLOW_CROSS_aarch64_unknown_linux_gnu, '1');
  assert.equal(cross.PKG_CONFIG_PATH, '/repo/deps/lib/pkgconfig');
  // A linker the user chose stays.
  const own = buildEnv(root, {...env, CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: 'clang'}, {target: 'aarch64-unknown-linux-gnu', shared: '/s'});
  assert.equal(own.CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER, 'clang');
  // Windows: mingw's gcc links, against the import library made for the build, with napi-build's libnode.
  const win = buildEnv(root, env, {
    target: 'x86_64-pc-windows-gnu', shared: '/cache/libtensorflow-2.21.0-win32-x64',
    windows: {pkgconfig: '/t/tf-win32-x64/pkgconfig', libnode: '/t/tf-win32-x64/libnode'},
  });
  assert.equal(win.CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER, 'x86_64-w64-mingw32-gcc');
  assert.equal(win.PKG_CONFIG_PATH_x86_64_pc_windows_gnu, '/t/tf-win32-x64/pkgconfig');
  assert.equal(win.LIBNODE_PATH, '/t/tf-win32-x64/libnode');
  assert.equal(cross.LIBNODE_PATH, undefined);
});

test('build: a target without a libtensorflow wheel is refused before cargo runs', async () => {
  const root = tempDir('root');
  await assert.rejects(build({root, log: quietLog(), env: baseEnv(), target: 'riscv64gc-unknown-linux-gnu'}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /cannot build for riscv64gc-unknown-linux-gnu: tfjs-node-rs has no libtensorflow for that target/);
    return true;
  });
  assert.deepEqual(fs.readdirSync(root), []);
});

test('no python3: says to install it or set TFJS_NODE_RS_LIBTENSORFLOW', async () => {
  const env = baseEnv({XDG_CACHE_HOME: tempDir('xdg'), PATH: tempDir('empty-path')});
  const root = tempDir('root');
  await assert.rejects(ensure({root, log: quietLog(), env, platform: PLATFORM}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /python3 was not found/);
    assert.match(err.message, /install python3 with pip, or set TFJS_NODE_RS_LIBTENSORFLOW to a directory holding libtensorflow_cc\.so\.2 and libtensorflow_framework\.so\.2/);
    return true;
  });
  assert.deepEqual(fs.readdirSync(root), []);
});

test('python3 without pip: says so', async () => {
  const env = baseEnv({
    XDG_CACHE_HOME: tempDir('xdg'), PATH: fakePythonBin(), FAKE_PIP: 'nopip',
    FAKE_PIP_LOG: path.join(tempDir('piplog'), 'calls'),
  });
  await assert.rejects(
    ensure({root: tempDir('root'), log: quietLog(), env, platform: PLATFORM}),
    (err) => {
      assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
      assert.match(err.message, /python3 has no pip/);
      assert.match(err.message, /No module named pip/);
      assert.match(err.message, /install python3 with pip, or set TFJS_NODE_RS_LIBTENSORFLOW/);
      return true;
    },
  );
});

test('pip download fails: shows pip\'s last lines', async () => {
  const cache = tempDir('xdg');
  const env = baseEnv({
    XDG_CACHE_HOME: cache, PATH: fakePythonBin(), FAKE_PIP: 'fail',
    FAKE_PIP_LOG: path.join(tempDir('piplog'), 'calls'),
  });
  const root = tempDir('root');
  await assert.rejects(ensure({root, log: quietLog(), env, platform: PLATFORM}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /^downloading tensorflow-cpu==2\.21\.0 failed: pip exited with code 1/);
    assert.match(err.message, /No matching distribution found for tensorflow-cpu==2\.21\.0/);
    return true;
  });
  assert.deepEqual(fs.readdirSync(root), []);
  assert.deepEqual(fs.readdirSync(path.join(cache, 'tfjs-node-rs')), []); // no partial download left
});

test('the CLI prints only the message and exits 1', () => {
  // A copy of the script in a temp root, so the CLI's default root is not the repository.
  const root = tempDir('cli-root');
  fs.mkdirSync(path.join(root, 'scripts'));
  fs.mkdirSync(path.join(root, 'js'));
  for (const file of ['scripts/libtensorflow.js', 'scripts/pypi.js', 'scripts/strip_symbols.js', 'scripts/prebind.js', 'js/libtensorflow_facts.js', 'js/cuda.js', 'js/native_loader_core.js', 'js/first_use.js']) {
    fs.copyFileSync(path.join(__dirname, '..', file), path.join(root, file));
  }
  const env = {...process.env, TFJS_NODE_RS_LIBTENSORFLOW: tempDir('empty-tf')};
  const res = spawnSync(process.execPath, [path.join(root, 'scripts', 'libtensorflow.js')], {env, encoding: 'utf8'});
  assert.equal(res.status, 1, res.stderr);
  assert.doesNotMatch(res.stderr, /\n\s+at /); // no stack trace
  assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
  if (process.platform === 'linux' && process.arch === 'x64') {
    assert.match(res.stderr, /^tfjs-node-rs: TFJS_NODE_RS_LIBTENSORFLOW=.* does not hold libtensorflow_cc\.so\.2 and libtensorflow_framework\.so\.2/);
  } else {
    assert.match(res.stderr, /^tfjs-node-rs: unsupported platform/);
  }
  assert.deepEqual(fs.readdirSync(root).sort(), ['js', 'scripts']); // nothing added beside the copied files
  // With --json (as the first require runs it): the same message as one line of JSON on stdout.
  const json = spawnSync(process.execPath, [path.join(root, 'scripts', 'libtensorflow.js'), '--json'], {env, encoding: 'utf8'});
  assert.equal(json.status, 1);
  assert.deepEqual(JSON.parse(json.stdout), {ok: false, message: res.stderr.trim().replace(/^tfjs-node-rs: /, '')});
});

test('build: a missing cargo is reported clearly', async () => {
  const root = tempDir('root');
  fs.mkdirSync(path.join(root, 'node_modules/.bin'), {recursive: true});
  fs.writeFileSync(path.join(root, 'node_modules/.bin/napi'), '', {mode: 0o755});
  const env = {PATH: tempDir('empty-path'), HOME: tempDir('home'), TFJS_NODE_RS_LIBTENSORFLOW: fakeTensorflowDir()};
  await assert.rejects(build({root, log: quietLog(), env}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /cargo \(the Rust toolchain\) was not found/);
    assert.match(err.message, /prebuilt binaries and do not need it/);
    return true;
  });
});

// ---------------------------------------------------------------------------
// One shared copy per machine

function cachedWheelEnv(extra = {}) {
  const cache = tempDir('xdg');
  fs.mkdirSync(path.join(cache, 'tfjs-node-rs'));
  fs.copyFileSync(goodWheelFile(), path.join(cache, 'tfjs-node-rs', WHEEL_NAME));
  return baseEnv({XDG_CACHE_HOME: cache, PATH: tempDir('empty-path'), ...extra});
}

const extractions = (log) => log.lines.filter((l) => /^extracting libtensorflow/.test(l)).length;

test('shared copy: unpacked once, and every project links to it', needsPython, async () => {
  const env = cachedWheelEnv();
  const shared = setup.sharedDir(env);
  assert.equal(shared, path.join(env.XDG_CACHE_HOME, 'tfjs-node-rs', 'libtensorflow-2.21.0-linux-x64'));
  const first = tempDir('root');
  const second = tempDir('root');
  const log = quietLog();
  await ensure({root: first, log, env, platform: PLATFORM});
  await ensure({root: second, log, env, platform: PLATFORM});
  assert.equal(extractions(log), 1, log.lines.join('\n'));
  for (const root of [first, second]) {
    assertDeps(root, {kind: 'wheel'});
    assert.equal(fs.readlinkSync(path.join(root, 'deps')), shared);
  }
  assert.equal(JSON.parse(fs.readFileSync(path.join(shared, '.complete'), 'utf8')).deps, shared);
  // Nothing but the wheel and the shared copy is left in the cache.
  assert.deepEqual(fs.readdirSync(path.dirname(shared)).sort(), [path.basename(shared), WHEEL_NAME]);
});

test('shared copy: concurrent installs wait for one unpacking', needsPython, async () => {
  const env = cachedWheelEnv();
  const log = quietLog();
  const roots = [tempDir('root'), tempDir('root'), tempDir('root')];
  await Promise.all(roots.map((root) => ensure({root, log, env, platform: PLATFORM})));
  assert.equal(extractions(log), 1, log.lines.join('\n'));
  assert.ok(log.lines.some((l) => /^waiting for another install/.test(l)), log.lines.join('\n'));
  for (const root of roots) assertDeps(root, {kind: 'wheel'});
});

test('shared copy: a lock left by a dead process is taken over', needsPython, async () => {
  const env = cachedWheelEnv();
  const lock = `${setup.sharedDir(env)}.lock`;
  fs.mkdirSync(lock);
  fs.writeFileSync(path.join(lock, 'owner.json'), JSON.stringify({pid: 99999999, host: os.hostname()}));
  const root = tempDir('root');
  await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assertDeps(root, {kind: 'wheel'});
  assert.ok(!fs.existsSync(lock));
});

test('shared copy removed (cache cleaned): the next run unpacks it again', needsPython, async () => {
  const env = cachedWheelEnv();
  const root = tempDir('root');
  await ensure({root, log: quietLog(), env, platform: PLATFORM});
  fs.rmSync(setup.sharedDir(env), {recursive: true});
  const log = quietLog();
  const r = await ensure({root, log, env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  assert.equal(extractions(log), 1);
  assertDeps(root, {kind: 'wheel'});
});

test('TFJS_NODE_RS_COPY_LIBTENSORFLOW=1 copies the shared copy into deps/; unset, deps/ links again', needsPython, async () => {
  const env = cachedWheelEnv();
  const root = tempDir('root');
  const log = quietLog();
  await ensure({root, log, env: {...env, [setup.COPY_ENV]: '1'}, platform: PLATFORM});
  const marker = assertDeps(root, {kind: 'wheel', copied: true});
  assert.equal(marker.source, setup.sharedDir(env));
  assert.equal(fs.readFileSync(path.join(root, 'deps/lib/libtensorflow_cc.so.2'), 'utf8'), 'cc '.repeat(10000));
  // Still valid on the next run with the switch, and the shared copy may go.
  fs.rmSync(setup.sharedDir(env), {recursive: true});
  const again = await ensure({root, log, env: {...env, [setup.COPY_ENV]: '1'}, platform: PLATFORM});
  assert.equal(again.fresh, false);
  // Without the switch the copy is replaced by a link (the shared copy is unpacked again).
  const linked = await ensure({root, log, env, platform: PLATFORM});
  assert.equal(linked.fresh, true);
  assertDeps(root, {kind: 'wheel'});
  assert.equal(extractions(log), 2);
});

test('a deps/ unpacked inside the project (earlier versions) is replaced by a link', needsPython, async () => {
  const env = cachedWheelEnv();
  const root = tempDir('root');
  await ensure({root, log: quietLog(), env: {...env, [setup.COPY_ENV]: '1'}, platform: PLATFORM});
  const r = await ensure({root, log: quietLog(), env, platform: PLATFORM});
  assert.equal(r.fresh, true);
  assertDeps(root, {kind: 'wheel'});
});

test('an unwritable cache: says where and what to do', async () => {
  // A file where the cache folder should be (root may write anywhere, so no chmod).
  const xdg = tempDir('xdg');
  fs.writeFileSync(path.join(xdg, 'tfjs-node-rs'), 'a file, not a folder');
  const env = baseEnv({XDG_CACHE_HOME: xdg, PATH: tempDir('empty-path')});
  await assert.rejects(ensure({root: tempDir('root'), log: quietLog(), env, platform: PLATFORM}), (err) => {
    assert.equal(err.code, 'TFJS_NODE_RS_SETUP');
    assert.match(err.message, /where libtensorflow is unpacked once per machine/);
    assert.match(err.message, /XDG_CACHE_HOME/);
    return true;
  });
});

// ---------------------------------------------------------------------------
// Stripping the symbol tables

const {stripSymbols} = require('../scripts/strip_symbols.js');
// The framework library as the wheel ships it (deps/lib holds the shared copy, stripped already).
const cachedWheel = setup._internal.findCachedWheel(setup.cacheDir(), setup._internal.wheelSpec('linux-x64'));
const HAVE_READELF = spawnSync('readelf', ['--version'], {stdio: 'ignore'}).status === 0;

function sectionNames(file) {
  const out = spawnSync('readelf', ['-S', '-W', file], {encoding: 'utf8'});
  assert.equal(out.status, 0, out.stderr);
  assert.equal(out.stderr, '', `readelf warns about ${file}: ${out.stderr}`);
  return [...out.stdout.matchAll(/^\s*\[\s*\d+\]\s+(\S*)/gm)].map((m) => m[1]);
}

test('stripSymbols: libtensorflow_framework loses .symtab/.strtab only and still loads', {
  skip: cachedWheel === null && 'no tensorflow-cpu wheel in the cache',
}, async () => {
  const dir = tempDir('strip');
  const realFramework = path.join(dir, 'unstripped.so.2');
  await setup._internal.extractZip(cachedWheel, dir, (name) =>
    (name === 'tensorflow/libtensorflow_framework.so.2' ? 'unstripped.so.2' : null));
  const file = path.join(dir, 'libtensorflow_framework.so.2');
  fs.copyFileSync(realFramework, file);
  const original = fs.readFileSync(file);
  const r = stripSymbols(file);
  assert.equal(r.before, original.length);
  assert.ok(r.after < r.before * 0.85, JSON.stringify(r)); // 65 -> 51 MB
  const stripped = fs.readFileSync(file);
  assert.equal(stripped.length, r.after);
  // Everything up to the cut is unchanged but the ELF header's section-table fields.
  const {readElfDynamic} = require('../js/native_loader_core.js');
  assert.deepEqual(readElfDynamic(file), readElfDynamic(realFramework));
  const cut = r.after - 64 * 31 - 0x200; // well inside the kept bytes
  assert.ok(original.subarray(64, cut).equals(stripped.subarray(64, cut)));
  if (HAVE_READELF) {
    const before = sectionNames(realFramework);
    assert.deepEqual(sectionNames(file), before.filter((n) => n !== '.symtab' && n !== '.strtab'));
  }
  // The dynamic linker takes it: dlopen succeeds (and then says it is not a Node addon).
  const res = spawnSync(process.execPath, ['-e', `try { process.dlopen({ exports: {} }, ${JSON.stringify(file)}); } catch (e) { console.log(e.message); }`], {encoding: 'utf8'});
  assert.match(res.stdout, /did not self-register|Module did not/, res.stdout + res.stderr);
  // A second run finds nothing to strip and leaves the file alone.
  assert.deepEqual(stripSymbols(file), {skipped: 'no .symtab (already stripped)'});
  assert.equal(fs.statSync(file).size, r.after);
});

test('stripSymbols: files that are not ELF are left alone', () => {
  const dir = tempDir('strip');
  for (const [name, data] of [['tiny', 'x'], ['text', 'not an ELF file '.repeat(10)]]) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, data);
    assert.match(stripSymbols(file).skipped, /not .*ELF/);
    assert.equal(fs.readFileSync(file, 'utf8'), data);
  }
});

test('shared copy: two installs in separate processes at once unpack once', needsPython, async () => {
  const env = cachedWheelEnv();
  const roots = [tempDir('root'), tempDir('root')];
  const script = `
    const setup = require(${JSON.stringify(path.join(__dirname, '..', 'scripts', 'libtensorflow.js'))});
    setup.ensureLibtensorflow({ root: process.argv[1], log: (m) => console.log(m), index: { retries: 0 }, platform: ${JSON.stringify(PLATFORM)} })
      .catch((err) => { console.error(err.message); process.exit(1); });
  `;
  const runs = roots.map((root) => new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script, root], {env: {...env, PATH: process.env.PATH}, stdio: ['ignore', 'pipe', 'pipe']});
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('close', (code) => resolve({code, out}));
  }));
  const results = await Promise.all(runs);
  for (const r of results) assert.equal(r.code, 0, r.out);
  const unpacked = results.filter((r) => /^extracting libtensorflow/m.test(r.out));
  assert.equal(unpacked.length, 1, results.map((r) => r.out).join('\n---\n'));
  for (const root of roots) assertDeps(root, {kind: 'wheel'});
});
