'use strict';
// The load-time checks and messages of js/native_loader.js, with each failure
// simulated: a fake platform / N-API version, a fake require of binding.js that
// throws what the napi loader throws, fake ELF addons, a fake TF_Version.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const loader = require('../js/native_loader_core');

const ROOT = path.resolve(__dirname, '..');
const OK_SYSTEM = {platform: 'linux', arch: 'x64', glibc: '2.36', napi: '9', node: 'v20.0.0'};
// A binding as the loader sees it: preloadLibrary is called only where the checkout holds the GPU
// package's cuda/ (npm run test:gpu-on-cpu links it).
const fakeBinding = (version) => ({tfVersion: () => version, preloadLibrary() {}});
const GOOD_BINDING = fakeBinding('2.21.0');

// A minimal 64-bit little-endian ELF shared object: one PT_LOAD covering the
// file, a PT_DYNAMIC with DT_NEEDED, DT_RUNPATH, DT_STRTAB and DT_STRSZ.
function fakeElf({needed = ['libtensorflow_cc.so.2'], runpath = '$ORIGIN/deps/lib:$ORIGIN/../tfjs-node-rs/deps/lib'} = {}) {
  const vaddrBase = 0x400000;
  const phoff = 64;
  const phnum = 2;
  const strOff = phoff + 56 * phnum;
  const strings = ['', ...needed, runpath];
  const offsets = [];
  let strtab = '';
  for (const s of strings) {
    offsets.push(strtab.length);
    strtab += `${s}\0`;
  }
  const dynOff = strOff + Math.ceil(strtab.length / 8) * 8;
  const dyn = [
    ...needed.map((_, i) => [1, offsets[1 + i]]),
    [29, offsets[strings.length - 1]],
    [5, vaddrBase + strOff],
    [10, strtab.length],
    [0, 0],
  ];
  const size = dynOff + dyn.length * 16;
  const buf = Buffer.alloc(size);
  buf.writeUInt32BE(0x7f454c46, 0);
  buf[4] = 2; // ELFCLASS64
  buf[5] = 1; // little-endian
  buf[6] = 1;
  buf.writeUInt16LE(3, 16); // ET_DYN
  buf.writeUInt16LE(62, 18); // x86-64
  buf.writeBigUInt64LE(BigInt(phoff), 0x20);
  buf.writeUInt16LE(64, 0x34);
  buf.writeUInt16LE(56, 0x36);
  buf.writeUInt16LE(phnum, 0x38);
  const ph = (i, type, offset, filesz) => {
    const p = phoff + i * 56;
    buf.writeUInt32LE(type, p);
    buf.writeBigUInt64LE(BigInt(offset), p + 8);
    buf.writeBigUInt64LE(BigInt(vaddrBase + offset), p + 16);
    buf.writeBigUInt64LE(BigInt(vaddrBase + offset), p + 24);
    buf.writeBigUInt64LE(BigInt(filesz), p + 32);
    buf.writeBigUInt64LE(BigInt(filesz), p + 40);
  };
  ph(0, 1, 0, size);
  ph(1, 2, dynOff, dyn.length * 16);
  buf.write(strtab, strOff, 'latin1');
  dyn.forEach(([tag, val], i) => {
    buf.writeBigUInt64LE(BigInt(tag), dynOff + i * 16);
    buf.writeBigUInt64LE(BigInt(val), dynOff + i * 16 + 8);
  });
  return buf;
}

// An installed layout: node_modules/tfjs-node-rs (the root, with or without
// deps/lib) and node_modules/tfjs-node-rs-linux-x64-gnu holding a fake addon.
function fakeInstall({platformPackage = true, deps = false} = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-loader-'));
  const nm = path.join(dir, 'node_modules');
  const root = path.join(nm, 'tfjs-node-rs');
  fs.mkdirSync(root, {recursive: true});
  fs.writeFileSync(path.join(root, 'package.json'), '{"name":"tfjs-node-rs","version":"0.1.0"}');
  if (deps) fs.mkdirSync(path.join(root, 'deps', 'lib'), {recursive: true});
  if (platformPackage) {
    const pkg = path.join(nm, loader.PLATFORM_PACKAGE);
    fs.mkdirSync(pkg);
    fs.writeFileSync(path.join(pkg, 'package.json'), `{"name":"${loader.PLATFORM_PACKAGE}","version":"0.1.0"}`);
    fs.writeFileSync(path.join(pkg, loader.ADDON_FILE), fakeElf());
  }
  return {dir, root, nm, cleanup: () => fs.rmSync(dir, {recursive: true, force: true})};
}

// What binding.js throws: 'Cannot find native binding' whose cause chains one
// error per attempt (the last attempt outermost).
function napiLoaderError(...attemptMessages) {
  const chain = attemptMessages.reduce((prev, msg) => {
    const e = new Error(msg);
    e.cause = prev;
    return e;
  }, null);
  const err = new Error('Cannot find native binding. npm has a bug related to optional dependencies (https://github.com/npm/cli/issues/4828).');
  err.cause = chain;
  return err;
}

function notFound(what) {
  return `Cannot find module '${what}'\nRequire stack:\n- ${path.join(ROOT, 'binding.js')}`;
}

// The fake installs have no libtensorflow; first use (js/first_use.js, tested on its own) is off.
const NO_PROVIDING = () => null;

function loadWith(opts) {
  return loader.load({system: OK_SYSTEM, env: {}, requireBinding: () => GOOD_BINDING, provide: NO_PROVIDING, ...opts});
}

function assertLoadError(fn, ...patterns) {
  let caught;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught, 'expected an error');
  assert.strictEqual(caught.code, loader.ERROR_CODE, caught.stack);
  assert.match(caught.message, /^tfjs-node-rs: /);
  for (const p of patterns) assert.match(caught.message, p);
  return caught;
}

test('a supported system loads and returns the binding', () => {
  const env = {};
  const binding = loader.load({system: OK_SYSTEM, env, requireBinding: () => GOOD_BINDING, provide: NO_PROVIDING});
  assert.strictEqual(binding, GOOD_BINDING);
});

// Every prebuilt target, by name, in every message that says what is supported.
const {ADDON_PLATFORMS} = require('../js/libtensorflow_facts.js');
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const SUPPORTED_RE = new RegExp(Object.values(ADDON_PLATFORMS).map((p) => escape(`${p.describe} (${p.rustTarget})`)).join(', '));

test('Linux arm64 with glibc is supported', () => {
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, arch: 'arm64'}}), GOOD_BINDING);
});

test('macOS on Apple silicon is supported (no C library check there)', () => {
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, platform: 'darwin', arch: 'arm64', glibc: null}}), GOOD_BINDING);
});

test('a libtensorflow dyld cannot find on macOS is reported as missing', () => {
  const inst = fakeInstall();
  try {
    const dyld = 'dlopen(/p/tfjs-node-rs.darwin-arm64.node, 0x0001): Library not loaded: @rpath/libtensorflow_cc.2.dylib\n' +
      "  Referenced from: <UUID> /p/tfjs-node-rs.darwin-arm64.node\n  Reason: tried: '/p/deps/lib/libtensorflow_cc.2.dylib' (no such file)";
    assertLoadError(
      () => loadWith({root: inst.root, requireBinding: () => { throw napiLoaderError(dyld); }}),
      /libtensorflow is missing/, /libtensorflow_cc\.2\.dylib was not found/,
    );
  } finally {
    inst.cleanup();
  }
});

test('Windows x64: the libraries\' folders go first on PATH for the addon\'s load only', () => {
  const inst = fakeInstall();
  try {
    const env = {PATH: 'C:\\Windows'};
    let seen;
    const binding = loadWith({
      system: {...OK_SYSTEM, platform: 'win32', arch: 'x64', glibc: null}, env, root: inst.root,
      requireBinding: () => { seen = env.PATH; return GOOD_BINDING; },
    });
    assert.strictEqual(binding, GOOD_BINDING);
    assert.strictEqual(seen, [path.join(inst.root, 'deps', 'lib'), 'C:\\Windows'].join(path.delimiter));
    assert.strictEqual(env.PATH, 'C:\\Windows');
    // Also when the load fails.
    assert.throws(() => loadWith({system: {...OK_SYSTEM, platform: 'win32', arch: 'x64'}, env, root: inst.root,
                                  requireBinding: () => { throw new Error('The specified module could not be found.'); }}));
    assert.strictEqual(env.PATH, 'C:\\Windows');
  } finally {
    inst.cleanup();
  }
});

test('Windows x64: a DLL not found names the three the addon needs, and which are there', () => {
  const inst = fakeInstall();
  try {
    assertLoadError(
      () => loadWith({system: {...OK_SYSTEM, platform: 'win32', arch: 'x64'}, env: {}, root: inst.root,
                      requireBinding: () => { throw napiLoaderError('The specified module could not be found.\r\n\\\\?\\C:\\p\\x.node'); }}),
      /a DLL the addon .* needs was not found/, /deps.lib._pywrap_tensorflow_common\.dll \(absent\)/, /python311\.dll \(absent\)/,
      /MSVCP140\.dll, VCRUNTIME140\.dll, VCRUNTIME140_1\.dll/,
    );
  } finally {
    inst.cleanup();
  }
});

test('unsupported platforms and architectures name the supported ones', () => {
  for (const [platform, arch] of [['darwin', 'x64'], ['win32', 'arm64'], ['linux', 'arm'], ['linux', 'ia32'], ['freebsd', 'x64']]) {
    let required = false;
    assertLoadError(
      () => loadWith({system: {...OK_SYSTEM, platform, arch}, requireBinding: () => { required = true; }}),
      new RegExp(`unsupported platform ${platform}/${arch}`),
      SUPPORTED_RE,
    );
    assert.strictEqual(required, false, 'the addon must not be loaded on an unsupported platform');
  }
});

test('machines TensorFlow has no build for say why, and what to use instead', () => {
  assertLoadError(() => loadWith({system: {...OK_SYSTEM, platform: 'darwin', arch: 'x64'}}),
                  /unsupported platform darwin\/x64 \(TensorFlow publishes no macOS x64 build of 2\.21; on an Apple-silicon Mac, run the arm64 Node\.js rather than one under Rosetta\)/);
  assertLoadError(() => loadWith({system: {...OK_SYSTEM, platform: 'win32', arch: 'arm64'}}), /no Windows on ARM build/, SUPPORTED_RE);
  assertLoadError(() => loadWith({system: {...OK_SYSTEM, arch: 'arm'}}), /no 32-bit ARM builds; use a 64-bit \(arm64\) OS/);
});

test('musl (no glibc) is rejected with the supported libc', () => {
  assertLoadError(
    () => loadWith({system: {...OK_SYSTEM, glibc: null}}),
    /does not use glibc \(musl, e\.g\. Alpine\?\), and TensorFlow publishes no musl build/,
    SUPPORTED_RE,
  );
});

test('the C library is read from the files the process has mapped', () => {
  const mapped = (file) => `7f79e4744000-7f79e476a000 r--p 00000000 fe:00 326279    ${file}\n` +
    '7ffc1c5f9000-7ffc1c61a000 rw-p 00000000 00:00 0          [stack]\n';
  assert.equal(loader.glibcFromMaps(mapped('/lib/x86_64-linux-gnu/libc-2.31.so')), '2.31');
  assert.equal(loader.glibcFromMaps(mapped('/usr/lib64/libc-2.17.so')), '2.17');
  // glibc 2.34 and later: libc.so.6 itself, no version in the name.
  assert.equal(loader.glibcFromMaps(mapped('/usr/lib/x86_64-linux-gnu/libc.so.6')), undefined);
  // musl (Alpine), also with a glibc compatibility layer; no C library mapped at all.
  assert.equal(loader.glibcFromMaps(mapped('/lib/ld-musl-x86_64.so.1')), null);
  assert.equal(loader.glibcFromMaps(mapped('/lib/ld-musl-aarch64.so.1') + mapped('/lib/libc.so.6')), null);
  assert.equal(loader.glibcFromMaps(mapped('/usr/bin/node')), null);
});

test('an unknown glibc version does not stop the load', () => {
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, glibc: undefined}}), GOOD_BINDING);
});

test('a too old glibc is rejected with the version found and needed', () => {
  assertLoadError(() => loadWith({system: {...OK_SYSTEM, glibc: '2.17'}}), /unsupported glibc 2\.17/, /glibc >= 2\.27/);
  assertLoadError(() => loadWith({system: {...OK_SYSTEM, glibc: '2.26'}}), /unsupported glibc 2\.26/);
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, glibc: '2.27'}}), GOOD_BINDING);
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, glibc: '2.100'}}), GOOD_BINDING);
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, glibc: '3.0'}}), GOOD_BINDING);
});

test('an N-API version below 8 is rejected before the addon is loaded', () => {
  for (const napi of ['7', '3', undefined]) {
    let required = false;
    assertLoadError(
      () => loadWith({system: {...OK_SYSTEM, napi, node: 'v12.0.0'}, requireBinding: () => { required = true; }}),
      new RegExp(`Node\\.js v12\\.0\\.0 provides N-API version ${napi === undefined ? '\\(none\\)' : napi}`),
      /needs N-API 8 or newer/,
      /Node\.js 18 or newer/,
    );
    assert.strictEqual(required, false);
  }
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, napi: '8'}}), GOOD_BINDING);
  assert.strictEqual(loadWith({system: {...OK_SYSTEM, napi: '10'}}), GOOD_BINDING);
});

test('TF_CPP_MIN_LOG_LEVEL is set to 2 before loading, unless already set', () => {
  const env = {};
  let seen;
  loader.load({system: OK_SYSTEM, env, requireBinding: () => { seen = env.TF_CPP_MIN_LOG_LEVEL; return GOOD_BINDING; }, provide: NO_PROVIDING});
  assert.strictEqual(seen, '2');
  const chosen = {TF_CPP_MIN_LOG_LEVEL: '0'};
  loader.load({system: OK_SYSTEM, env: chosen, requireBinding: () => GOOD_BINDING, provide: NO_PROVIDING});
  assert.strictEqual(chosen.TF_CPP_MIN_LOG_LEVEL, '0');
});

test('missing libtensorflow: says so, where it was looked for, and how to fix it', () => {
  const inst = fakeInstall();
  try {
    const dlopen = 'libtensorflow_cc.so.2: cannot open shared object file: No such file or directory';
    const err = assertLoadError(
      () => loadWith({
        root: inst.root,
        env: {LD_LIBRARY_PATH: '/opt/custom/lib'},
        // As napi's loader chains them: the addon's dlopen error, then its wasi fallbacks.
        requireBinding: () => {
          throw napiLoaderError(dlopen, notFound(loader.PLATFORM_PACKAGE), notFound('./tfjs-node-rs.wasi.cjs'),
                                notFound('tfjs-node-rs-wasm32-wasi'));
        },
      }),
      /libtensorflow is missing/,
      /libtensorflow_cc\.so\.2/,
      /To set it up again, run `node .*scripts\/libtensorflow\.js`/,
      /TFJS_NODE_RS_LIBTENSORFLOW/,
    );
    const addon = path.join(inst.nm, loader.PLATFORM_PACKAGE, loader.ADDON_FILE);
    assert.ok(err.message.includes(addon), err.message);
    // The addon's RUNPATH entries, resolved against its folder, and LD_LIBRARY_PATH.
    assert.ok(err.message.includes(path.join(inst.nm, loader.PLATFORM_PACKAGE, 'deps', 'lib')), err.message);
    assert.ok(err.message.includes(path.join(inst.root, 'deps', 'lib')), err.message);
    assert.ok(err.message.includes('/opt/custom/lib'), err.message);
    assert.match(err.message, /\(absent\)/);
    assert.doesNotMatch(err.message, /wasi|Cannot find native binding|Cannot find module|Require stack/);
    assert.ok(err.cause, 'the original error is kept as the cause');
  } finally {
    inst.cleanup();
  }
});

test('missing libtensorflow_framework is reported the same way', () => {
  const inst = fakeInstall({deps: true});
  try {
    assertLoadError(
      () => loadWith({
        root: inst.root,
        requireBinding: () => {
          throw napiLoaderError('libtensorflow_framework.so.2: cannot open shared object file: No such file or directory');
        },
      }),
      /libtensorflow is missing/,
      /libtensorflow_framework\.so\.2/,
      /present but incomplete/,
    );
  } finally {
    inst.cleanup();
  }
});

test('a missing platform package says it is not installed and how to reinstall', () => {
  const inst = fakeInstall({platformPackage: false});
  try {
    assertLoadError(
      () => loadWith({
        root: inst.root,
        requireBinding: () => {
          throw napiLoaderError(notFound(`./${loader.ADDON_FILE}`), notFound(loader.PLATFORM_PACKAGE));
        },
      }),
      /prebuilt addon is not installed/,
      new RegExp(loader.PLATFORM_PACKAGE),
      /--omit=optional/,
      /npm install/,
    );
  } finally {
    inst.cleanup();
  }
});

test('a too old glibc / libstdc++ found at load time is reported', () => {
  const inst = fakeInstall();
  try {
    assertLoadError(
      () => loadWith({
        root: inst.root,
        requireBinding: () => {
          throw napiLoaderError("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by libtensorflow_cc.so.2)");
        },
      }),
      /too old: GLIBC_2\.34 is needed/,
      SUPPORTED_RE,
    );
  } finally {
    inst.cleanup();
  }
});

test('a libtensorflow lacking symbols is reported as incompatible', () => {
  const inst = fakeInstall();
  try {
    assertLoadError(
      () => loadWith({
        root: inst.root,
        requireBinding: () => { throw napiLoaderError('/x/tfjs-node-rs.linux-x64-gnu.node: undefined symbol: TFE_NewOp'); },
      }),
      /incompatible: it lacks the symbol TFE_NewOp/,
      /libtensorflow 2\.x/,
    );
  } finally {
    inst.cleanup();
  }
});

test('other load errors are wrapped with the loader messages', () => {
  const inst = fakeInstall();
  try {
    assertLoadError(
      () => loadWith({root: inst.root, requireBinding: () => { throw napiLoaderError('something odd'); }}),
      /could not be loaded/,
      /something odd/,
    );
  } finally {
    inst.cleanup();
  }
});

test('TF_Version of another major version is rejected, naming found and needed', () => {
  for (const v of ['1.15.0', '3.0.0']) {
    assertLoadError(
      () => loadWith({requireBinding: () => fakeBinding(v)}),
      new RegExp(`incompatible libtensorflow ${v.replace(/\./g, '\\.')}`),
      /needs libtensorflow 2\.x/,
    );
  }
  assert.ok(loadWith({requireBinding: () => fakeBinding('2.99.1')}));
});

test("the loaded binding carries TF_Version, as tfjs-node's binding does", () => {
  // Client libraries (e.g. @vladmandic/human) read tf.backend().binding.TF_Version to tell that
  // tfjs-node is present, and fall back to tfjs's cpu backend without it.
  const binding = loadWith({requireBinding: () => fakeBinding('2.99.1')});
  assert.strictEqual(binding.TF_Version, '2.99.1');
});

test('readElfDynamic reads DT_NEEDED and DT_RUNPATH', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-elf-'));
  try {
    const file = path.join(dir, 'a.node');
    fs.writeFileSync(file, fakeElf({needed: ['libtensorflow_cc.so.2', 'libc.so.6'], runpath: '$ORIGIN/a:/b'}));
    assert.deepStrictEqual(loader.readElfDynamic(file), {
      machine: 62,
      needed: ['libtensorflow_cc.so.2', 'libc.so.6'],
      runpath: ['$ORIGIN/a', '/b'],
      rpath: [],
    });
    fs.writeFileSync(file, 'not an elf file at all, but long enough to have a header.............');
    assert.throws(() => loader.readElfDynamic(file), /not an ELF file/);
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});

// The addon's RUNPATH (build.rs) reaches deps/lib in every layout it is installed in.
function assertInstalledRunpath(elf) {
  assert.ok(elf.needed.includes('libtensorflow_cc.so.2'), JSON.stringify(elf));
  for (const dir of ['$ORIGIN/deps/lib', '$ORIGIN/../tfjs-node-rs/deps/lib', '$ORIGIN/../@tensorflow/tfjs-node/deps/lib', '$ORIGIN/../../deps/lib']) {
    assert.ok(elf.runpath.includes(dir), `RUNPATH lacks ${dir}: ${JSON.stringify(elf)}`);
  }
}

// The cross-built arm64 addon (scripts/build.js --target aarch64-unknown-linux-gnu), when present.
const builtArm64 = path.join(ROOT, `tfjs-node-rs.${ADDON_PLATFORMS['linux-arm64'].napi}.node`);
test('the cross-built arm64 addon: an aarch64 ELF with the same RUNPATH', {skip: !fs.existsSync(builtArm64) && 'arm64 addon not built'}, () => {
  const elf = loader.readElfDynamic(builtArm64);
  assert.strictEqual(elf.machine, 183); // EM_AARCH64
  assertInstalledRunpath(elf);
});

// With a built addon: its real RUNPATH, and the real dlopen error of a copy that
// sits where no libtensorflow can be found.
const built = path.join(ROOT, loader.ADDON_FILE);
test('the built addon: RUNPATH, and the real missing-libtensorflow error', {skip: !fs.existsSync(built) && 'addon not built'}, () => {
  const elf = loader.readElfDynamic(built);
  assertInstalledRunpath(elf);
  const inst = fakeInstall();
  try {
    const addon = path.join(inst.nm, loader.PLATFORM_PACKAGE, loader.ADDON_FILE);
    fs.copyFileSync(built, addon);
    const env = {...process.env};
    delete env.LD_LIBRARY_PATH;
    assertLoadError(
      () => loader.load({system: loader.detect(), env, root: inst.root, requireBinding: () => require(addon), provide: NO_PROVIDING}),
      /libtensorflow is missing/,
      /scripts\/libtensorflow\.js/,
    );
  } finally {
    inst.cleanup();
  }
});

test('detect() describes this process', () => {
  const sys = loader.detect();
  assert.strictEqual(sys.platform, process.platform);
  assert.strictEqual(sys.arch, process.arch);
  assert.strictEqual(sys.napi, process.versions.napi);
  if (process.platform !== 'linux') return;
  // The process report's glibc version, which names the file only before 2.34.
  const reported = process.report.getReport().header.glibcVersionRuntime;
  if (!reported) assert.strictEqual(sys.glibc, null);
  else if (loader.versionBelow(reported, [2, 34])) assert.strictEqual(sys.glibc, reported);
  else assert.strictEqual(sys.glibc, undefined);
  assert.doesNotThrow(() => loader.checkEnvironment(sys));
});
