#!/usr/bin/env node
'use strict';
// Builds the addon from source in release mode:
//   libtensorflow into deps/ (scripts/libtensorflow.js), then
//   napi build --platform --release --js binding.js --dts binding.d.ts, then
//   cargo build --release -p tfjs-node-rs-preload (the small addon that loads the main one on a
//   native thread, written beside it as tfjs-node-rs-preload.<platform>.node; not for Windows)
// With `--target aarch64-unknown-linux-gnu` on an x64 machine it cross-builds the arm64
// addon (tfjs-node-rs.linux-arm64-gnu.node) instead: linked by Debian's aarch64 gcc against
// the arm64 wheel's libraries, unpacked into their shared copy in the cache (deps/ stays
// this machine's). With `--target aarch64-apple-darwin` it cross-builds the macOS arm64 addon
// (tfjs-node-rs.darwin-arm64.node) against the macosx_12_0_arm64 wheel's dylibs: cargo-zigbuild
// links it with zig (a Mach-O linker that needs no Apple SDK); both are installed on demand
// into ${XDG_CACHE_HOME:-~/.cache}/tfjs-node-rs/ (ZIG_TOOLS below), the Rust target with rustup.
// With `--target x86_64-pc-windows-gnu` it cross-builds the Windows x64 addon with mingw-w64
// (the MSVC target needs Microsoft's linker and SDK) against the win_amd64 wheel's
// _pywrap_tensorflow_common.dll (windowsLinkFiles below), and writes it under napi's -msvc name,
// tfjs-node-rs.win32-x64-msvc.node: the addon reaches Node.js only through N-API, looked up in
// node.exe at load, so the official (MSVC-built) node.exe loads it, and its napi-rs loader looks
// for that name. The python311.dll stub the DLL needs is built beside it, into the platform
// package (npm/win32-x64-msvc/python311.dll).
// The generated loader goes to binding.js and its types to binding.d.ts, so the
// hand-written index.js / index.d.ts are never overwritten.
// Extra command-line arguments are passed on to `napi build` (e.g. --verbose).

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {
  ensureLibtensorflow, provideShared, platformOfTarget, hostPlatform, cacheDir, SETUP_ERROR_CODE, setupError, log: defaultLog,
} = require('./libtensorflow');
const {MIN_MACOS, ADDON_PLATFORMS, LIBRARIES, PRELOAD_BINARY, preloadFile} = require('../js/libtensorflow_facts');
const {readPe, importsFrom} = require('./pe');
const {stub: python311Stub} = require('./windows/python311_stub');

// The cross linker for macOS targets, pinned: cargo-zigbuild (from crates.io, `cargo install`ed
// into <cache>/cargo-zigbuild/) runs zig (PyPI's ziglang, in the virtual environment
// <cache>/zig-venv/) as the linker. The versions the macOS addon was first built and checked with.
const ZIG_TOOLS = {cargoZigbuild: '0.24.1', ziglang: '0.17.1'};

// Whether Rust target `triple` is a macOS one; a Windows one.
const isApple = (triple) => /-apple-darwin$/.test(triple);
const isWindows = (triple) => /-windows-/.test(triple);
// The mingw-w64 tools of the Windows build, by the Debian package that has them.
const MINGW = {
  'gcc-mingw-w64-x86-64': 'x86_64-w64-mingw32-gcc',
  'binutils-mingw-w64-x86-64': 'x86_64-w64-mingw32-dlltool',
};

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
// would try to download or build TensorFlow without it). For a macOS target (`cross.zig`:
// ZIG_TOOLS' paths), cargo-zigbuild on PATH and its python with ziglang instead of a linker,
// and MACOSX_DEPLOYMENT_TARGET (also read by a native macOS build, `target`).
function buildEnv(root, env, cross, target) {
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
  // The wheel's dylibs say they need macOS 12.0: the addon asks for no newer (rustc and
  // cargo-zigbuild read this; rustc's own default for aarch64-apple-darwin is 11.0).
  if (isApple((cross && cross.target) || target || '') && !out.MACOSX_DEPLOYMENT_TARGET) {
    out.MACOSX_DEPLOYMENT_TARGET = MIN_MACOS;
  }
  if (cross) {
    const triple = cross.target.replace(/-/g, '_');
    const linker = `CARGO_TARGET_${triple.toUpperCase()}_LINKER`;
    if (cross.zig) {
      out.PATH = [cross.zig.bin, ...(out.PATH || '').split(path.delimiter).filter(Boolean)].join(path.delimiter);
      out.CARGO_ZIGBUILD_PYTHON_PATH = cross.zig.python;
    } else if (!out[linker]) {
      out[linker] = isWindows(cross.target) ? MINGW['gcc-mingw-w64-x86-64'] : `${cross.target.split('-')[0]}-linux-gnu-gcc`;
    }
    // Windows links an import library made for the build (windowsLinkFiles), not deps/.
    out[`PKG_CONFIG_PATH_${triple}`] = cross.windows ? cross.windows.pkgconfig : path.join(cross.shared, 'lib', 'pkgconfig');
    if (cross.windows) out.LIBNODE_PATH = cross.windows.libnode;
    out[`PKG_CONFIG_ALLOW_CROSS_${triple}`] = '1';
  }
  return out;
}

// Runs a setup command for the cross tools, its output shown; throws a setup error when it fails.
function runTool(cmd, args, {env, log, why}) {
  log(`${why}: ${cmd} ${args.join(' ')}`);
  const res = spawnSync(cmd, args, {env, stdio: ['ignore', 'inherit', 'inherit']});
  if (res.error || res.status !== 0) {
    const how = res.error ? res.error.message : res.signal ? `signal ${res.signal}` : `exit code ${res.status}`;
    throw setupError(`${why} failed (${cmd} ${args.join(' ')}: ${how})`);
  }
}

/**
 * The tools that cross-build for macOS target `target`, installed when missing: the Rust
 * target (rustup), ziglang in a virtual environment and cargo-zigbuild, both under the
 * cache (ZIG_TOOLS). Returns {bin, python}: the folder holding cargo-zigbuild, and the
 * python that runs `-m ziglang`.
 */
function zigTools(target, env, log) {
  ensureRustTarget(target, env, log);
  const cache = cacheDir(env);
  const venv = path.join(cache, 'zig-venv');
  const python = path.join(venv, 'bin', 'python3');
  const zigVersion = spawnSync(python, ['-m', 'ziglang', 'version'], {env, encoding: 'utf8'});
  if (zigVersion.error || zigVersion.status !== 0 || zigVersion.stdout.trim() !== ZIG_TOOLS.ziglang) {
    if (!fs.existsSync(python)) {
      runTool('python3', ['-m', 'venv', venv], {env, log, why: 'making a Python environment for zig (the Mach-O linker)'});
    }
    runTool(python, ['-m', 'pip', 'install', '--disable-pip-version-check', `ziglang==${ZIG_TOOLS.ziglang}`],
      {env, log, why: `installing zig ${ZIG_TOOLS.ziglang} (PyPI's ziglang)`});
  }
  const root = path.join(cache, 'cargo-zigbuild');
  const bin = path.join(root, 'bin');
  const version = spawnSync(path.join(bin, 'cargo-zigbuild'), ['--version'], {env, encoding: 'utf8'});
  if (version.error || version.status !== 0 || !version.stdout.includes(ZIG_TOOLS.cargoZigbuild)) {
    runTool('cargo', ['install', '--locked', '--root', root, 'cargo-zigbuild', '--version', ZIG_TOOLS.cargoZigbuild],
      {env, log, why: `installing cargo-zigbuild ${ZIG_TOOLS.cargoZigbuild}`});
  }
  return {bin, python};
}

function ensureRustTarget(target, env, log) {
  const installed = spawnSync('rustup', ['target', 'list', '--installed'], {env, encoding: 'utf8'});
  if (installed.error || installed.status !== 0 || !installed.stdout.split('\n').includes(target)) {
    runTool('rustup', ['target', 'add', target], {env, log, why: `adding the Rust target ${target}`});
  }
}

// Installs the mingw-w64 packages (MINGW) that are missing, with apt-get as root; elsewhere says
// which to install.
function ensureMingw(env, log) {
  const onPath = (tool) => (env.PATH || '').split(path.delimiter).some((dir) => dir && fs.existsSync(path.join(dir, tool)));
  const missing = Object.keys(MINGW).filter((pkg) => !onPath(MINGW[pkg]));
  if (!missing.length) return;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw setupError(`building for Windows needs mingw-w64: install ${missing.join(' ')} (sudo apt-get install ${missing.join(' ')})`);
  }
  const aptEnv = {...env, DEBIAN_FRONTEND: 'noninteractive'};
  const install = ['install', '-y', '--no-install-recommends', ...missing];
  if (spawnSync('apt-get', install, {env: aptEnv, stdio: 'inherit'}).status !== 0) {
    runTool('apt-get', ['update'], {env: aptEnv, log, why: 'updating apt\'s package lists'});
    runTool('apt-get', install, {env: aptEnv, log, why: 'installing mingw-w64'});
  }
}

/**
 * What the Windows build links against, made from the shared win32-x64 copy's DLL (readPe reads
 * its tables in under a second, so nothing generated is kept in the repository):
 *   <dir>/libtensorflow.dll.a and pkgconfig/tensorflow.pc: an import library of the DLL's 582
 *     TF_/TFE_ exports, found by tensorflow-sys through pkg-config (`-ltensorflow`);
 *   <stubOut>: the python311.dll stub, exporting the 219 names the DLL imports from python311.dll
 *     (its pybind11 modules'; TF's C API never calls them: scripts/windows/python311_stub.js);
 *   <dir>/libnode/: the napi crate's build script (napi-build) on windows-gnu links `-lnode` from
 *     LIBNODE_PATH and panics without a libnode.dll there: an empty file and an import library
 *     of no names satisfy it, and nothing is imported from it (napi's dyn-symbols feature finds
 *     N-API in node.exe at load, so the addon loads into any node.exe).
 * Returns {pkgconfig, libnode}: the folders for PKG_CONFIG_PATH and LIBNODE_PATH.
 */
function windowsLinkFiles({shared, dir, stubOut, env, log}) {
  const dll = LIBRARIES.win32.libs[0];
  const {exports, imports} = readPe(path.join(shared, 'lib', dll));
  const api = [...new Set(exports.filter((n) => /^TFE?_/.test(n)))].sort();
  const python = [...new Set(importsFrom(imports, 'python311.dll'))].sort();
  fs.mkdirSync(path.join(dir, 'pkgconfig'), {recursive: true});
  fs.writeFileSync(path.join(dir, 'tensorflow.def'), ['LIBRARY ' + dll, 'EXPORTS', ...api.map((n) => `  ${n}`), ''].join('\n'));
  runTool(MINGW['binutils-mingw-w64-x86-64'],
    ['-m', 'i386:x86-64', '-d', path.join(dir, 'tensorflow.def'), '-l', path.join(dir, 'libtensorflow.dll.a')],
    {env, log, why: `making the import library of ${dll} (${api.length} TF_/TFE_ exports)`});
  fs.writeFileSync(path.join(dir, 'pkgconfig', 'tensorflow.pc'), [
    `libdir=${dir}`,
    `includedir=${path.join(shared, 'include')}`,
    'Name: tensorflow',
    `Description: TensorFlow C API (${dll} of the tensorflow-cpu win_amd64 wheel)`,
    'Version: 2.21.0',
    'Libs: -L${libdir} -ltensorflow',
    'Cflags: -I${includedir}',
    '',
  ].join('\n'));
  const {c, def, funcs, data} = python311Stub(python);
  fs.writeFileSync(path.join(dir, 'python311_stub.c'), c);
  fs.writeFileSync(path.join(dir, 'python311.def'), def);
  fs.mkdirSync(path.dirname(stubOut), {recursive: true});
  runTool(MINGW['gcc-mingw-w64-x86-64'],
    ['-O2', '-shared', '-s', '-o', stubOut, path.join(dir, 'python311_stub.c'), path.join(dir, 'python311.def')],
    {env, log, why: `building the python311.dll stub (${funcs} functions, ${data} data symbols)`});
  const libnode = path.join(dir, 'libnode');
  fs.mkdirSync(libnode, {recursive: true});
  fs.writeFileSync(path.join(libnode, 'node.def'), 'LIBRARY node.exe\nEXPORTS\n');
  fs.writeFileSync(path.join(libnode, 'libnode.dll'), '');
  runTool(MINGW['binutils-mingw-w64-x86-64'],
    ['-m', 'i386:x86-64', '-d', path.join(libnode, 'node.def'), '-l', path.join(libnode, 'libnode.dll.a')],
    {env, log, why: 'making the empty libnode import library napi-build asks for'});
  return {pkgconfig: path.join(dir, 'pkgconfig'), libnode};
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
  // The target's libtensorflow, in its shared copy; for macOS, the zig linker; for Windows,
  // mingw-w64 and the import library.
  const cross = crossKey && {
    target,
    shared: await provideShared({key: crossKey, env, log}),
    zig: isApple(target) ? zigTools(target, buildEnv(root, env), log) : null,
  };
  if (cross && isWindows(target)) {
    const toolEnv = buildEnv(root, env);
    ensureRustTarget(target, toolEnv, log);
    ensureMingw(toolEnv, log);
    const targetDir = env.CARGO_TARGET_DIR ? path.resolve(root, env.CARGO_TARGET_DIR) : path.join(root, 'target');
    cross.windows = windowsLinkFiles({
      shared: cross.shared,
      dir: path.join(targetDir, `tf-${crossKey}`),
      stubOut: path.join(root, 'npm', ADDON_PLATFORMS[crossKey].napi, 'python311.dll'),
      env: toolEnv,
      log,
    });
  }
  const childEnv = buildEnv(root, env, cross, target);
  const napiArgs = [
    'build', '--platform', '--release',
    '--js', 'binding.js', '--dts', 'binding.d.ts',
    ...(cross ? ['--target', target] : []),
    // napi's --cross-compile: `cargo zigbuild` instead of `cargo build`.
    ...(cross && cross.zig ? ['--cross-compile'] : []),
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
  if (cross && isWindows(target)) {
    // napi names the file after the Rust target (-gnu); the loaders look for the -msvc name.
    const napiName = ADDON_PLATFORMS[crossKey].napi;
    const built = path.join(root, `tfjs-node-rs.${napiName.replace(/-msvc$/, '-gnu')}.node`);
    fs.renameSync(built, path.join(root, `tfjs-node-rs.${napiName}.node`));
    log(`wrote tfjs-node-rs.${napiName}.node (built with the GNU toolchain)`);
    return 0;
  }
  return buildPreload({root, env: childEnv, target: cross && target, zig: Boolean(cross && cross.zig), key: crossKey || hostPlatform(), log});
}

/**
 * Builds the preload addon (preload/: it loads the main one on a native thread, see
 * js/native_loader_core.js's backgroundLoader) for the same target with cargo, and writes it
 * beside the main addon as preloadFile(<napi>). Not for Windows, where the main thread
 * loads the addon. Returns cargo's exit status.
 */
function buildPreload({root, env, target, zig, key, log}) {
  const args = [zig ? 'zigbuild' : 'build', '--release', '-p', PRELOAD_BINARY, ...(target ? ['--target', target] : [])];
  log(`cargo ${args.join(' ')}`);
  const res = spawnSync('cargo', args, {cwd: root, env, stdio: 'inherit'});
  if (res.error) throw res.error;
  if (res.status !== 0) {
    log(`the preload addon's build failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`})`);
    return res.status || 1;
  }
  const targetDir = env.CARGO_TARGET_DIR ? path.resolve(root, env.CARGO_TARGET_DIR) : path.join(root, 'target');
  const apple = target ? isApple(target) : process.platform === 'darwin';
  const library = `lib${PRELOAD_BINARY.replace(/-/g, '_')}.${apple ? 'dylib' : 'so'}`;
  const file = preloadFile(ADDON_PLATFORMS[key].napi);
  fs.copyFileSync(path.join(targetDir, target || '', 'release', library), path.join(root, file));
  log(`wrote ${file}`);
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

// The newest modification time among the files the addons are built from.
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
  for (const p of ['src', 'build.rs', 'Cargo.toml', 'Cargo.lock', path.join('.cargo', 'config.toml'), 'preload']) {
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

module.exports = {build, buildEnv, zigTools, isDevCheckout, napiCli, newestSourceMtime, reportError, runMain};

if (require.main === module) main();
