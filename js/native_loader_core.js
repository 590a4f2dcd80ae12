'use strict';
// The logic behind js/native_loader.js: checks the platform and the N-API
// version before loading the addon, loads it through the napi-generated
// binding.js, turns a failed load into one clear Error, and checks the
// libtensorflow version after loading.
//
// Everything the checks look at (platform, arch, glibc, N-API version, the
// environment, how binding.js is required, the file system) can be injected, so
// __test__/native_loader.test.js simulates each failure without a broken install.

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const MIN_NAPI = 8; // Cargo.toml: napi feature "napi8"
const TF_MAJOR = 2;
const {TF_VERSION: TF_BUILT_AGAINST, MIN_GLIBC, LIBS, LIBRARIES, ENV_DIR, CUDA_ENV, GPU_PACKAGE, ADDON_PLATFORMS, UNSUPPORTED_NOTES, preloadFile} = require('./libtensorflow_facts');
const {cudaLibraryPaths, packageCudaDir, cudaSwitch, nvidiaDriver} = require('./cuda');
const {provideAtFirstUse, setupCommand} = require('./first_use');
const SUPPORTED = Object.values(ADDON_PLATFORMS).map((p) => `${p.describe} (${p.rustTarget})`).join(', ');
// This machine's; on another machine checkEnvironment stops the load before these are used.
const OWN_TARGET = ADDON_PLATFORMS[`${process.platform}-${process.arch}`] || ADDON_PLATFORMS['linux-x64'];
const PLATFORM_PACKAGE = `tfjs-node-rs-${OWN_TARGET.napi}`;
const ADDON_FILE = `tfjs-node-rs.${OWN_TARGET.napi}.node`;
const PRELOAD_FILE = preloadFile(OWN_TARGET.napi);
const ERROR_CODE = 'TFJS_NODE_RS_LOAD';

function loadError(message, cause) {
  const err = new Error(`tfjs-node-rs: ${message}`);
  err.code = ERROR_CODE;
  if (cause !== undefined) err.cause = cause;
  return err;
}

/**
 * The glibc version of the C library in `maps` (/proc/self/maps' text), read from its file's name:
 * glibc before 2.34 installs itself as `libc-<version>.so`. null for another C library (musl's
 * `ld-musl-<arch>.so.1`, or no glibc at all); undefined for glibc 2.34 and later, which is named
 * `libc.so.6` (newer than the 2.27 the addon needs). Not Node's process report, which says the
 * version but took 4.3 ms of every start here (against 0.1 ms for reading the maps).
 */
function glibcFromMaps(maps) {
  if (/\/ld-musl-[^/\s]*$/m.test(maps)) return null;
  const versioned = /\/libc-(\d+\.\d+)\.so$/m.exec(maps);
  if (versioned) return versioned[1];
  return /\/libc\.so\.6$/m.test(maps) ? undefined : null;
}

// The glibc version this process runs on; null for another C library; undefined when glibc's
// file does not say, or the maps cannot be read: loading is then attempted, and a glibc too old
// for the addon fails it with a message explainLoadError reads.
function runtimeGlibc() {
  if (process.platform !== 'linux') return null;
  let maps;
  try {
    maps = fs.readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return undefined;
  }
  return glibcFromMaps(maps);
}

// What this process runs on. Fields: platform, arch, glibc (version string; null
// for another libc; undefined if not known, see runtimeGlibc), napi (process.versions.napi), node.
function detect() {
  return {
    platform: process.platform,
    arch: process.arch,
    glibc: runtimeGlibc(),
    napi: process.versions.napi,
    node: process.version,
  };
}

function versionBelow(version, min) {
  const parts = String(version).split('.').map((n) => parseInt(n, 10));
  for (let i = 0; i < min.length; i++) {
    const v = Number.isFinite(parts[i]) ? parts[i] : 0;
    if (v !== min[i]) return v < min[i];
  }
  return false;
}

/**
 * Throws the Error for an unsupported platform, architecture or libc, or a
 * Node.js whose N-API version is too old. Runs before the addon is loaded.
 */
function checkEnvironment({platform, arch, glibc, napi, node} = detect()) {
  const key = `${platform}-${arch}`;
  if (!Object.hasOwn(ADDON_PLATFORMS, key)) {
    const note = Object.hasOwn(UNSUPPORTED_NOTES, key) ? ` (${UNSUPPORTED_NOTES[key]})` : '';
    throw loadError(
      `unsupported platform ${platform}/${arch}${note}: prebuilt binaries exist only for ${SUPPORTED}. ` +
        'Use such a machine or container (e.g. the node:22-bookworm-slim image).',
    );
  }
  if (platform === 'linux' && (glibc === null || glibc === '')) {
    throw loadError(
      `unsupported C library: this Linux ${arch} system does not use glibc (musl, e.g. Alpine?), and ` +
        `TensorFlow publishes no musl build. Prebuilt binaries exist only for ${SUPPORTED}; use a ` +
        'glibc-based distribution or image (e.g. node:22-bookworm-slim instead of node:22-alpine).',
    );
  }
  if (platform === 'linux' && glibc && versionBelow(glibc, MIN_GLIBC)) {
    throw loadError(
      `unsupported glibc ${glibc}: libtensorflow ${TF_BUILT_AGAINST} needs glibc >= ${MIN_GLIBC.join('.')}. ` +
        `Prebuilt binaries exist only for ${SUPPORTED} (e.g. Debian 10+, Ubuntu 18.04+, RHEL 8+).`,
    );
  }
  checkNapi(napi, node);
}

function checkNapi(napi, node) {
  const napiVersion = parseInt(napi, 10);
  if (!(napiVersion >= MIN_NAPI)) {
    throw loadError(
      `Node.js ${node || '(unknown version)'} provides N-API version ${napi === undefined ? '(none)' : napi}, ` +
        `but the addon needs N-API ${MIN_NAPI} or newer. Use Node.js 18 or newer ` +
        '(the supported versions are listed in the README).',
    );
  }
}

// ---------------------------------------------------------------------------
// ELF: the machine (e_machine) and the DT_NEEDED and DT_RUNPATH/DT_RPATH entries of a
// 64-bit little-endian shared object, read from its program headers (present even when
// stripped).

function readElfDynamic(file, readFile = fs.readFileSync) {
  const buf = readFile(file);
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file} is not an ELF file`);
  if (buf[4] !== 2 || buf[5] !== 1) throw new Error(`${file} is not a 64-bit little-endian ELF file`);
  const machine = buf.readUInt16LE(0x12);
  const num = (off) => Number(buf.readBigUInt64LE(off));
  const phoff = num(0x20);
  const phentsize = buf.readUInt16LE(0x36);
  const phnum = buf.readUInt16LE(0x38);
  const loads = [];
  let dynamic = null;
  for (let i = 0; i < phnum; i++) {
    const p = phoff + i * phentsize;
    if (p + 56 > buf.length) throw new Error(`${file}: truncated program headers`);
    const seg = {type: buf.readUInt32LE(p), offset: num(p + 8), vaddr: num(p + 16), filesz: num(p + 32)};
    if (seg.type === 1) loads.push(seg);
    if (seg.type === 2) dynamic = seg;
  }
  if (!dynamic) return {machine, needed: [], runpath: [], rpath: []};
  const entries = [];
  for (let p = dynamic.offset; p + 16 <= dynamic.offset + dynamic.filesz && p + 16 <= buf.length; p += 16) {
    const tag = num(p);
    if (tag === 0) break;
    entries.push({tag, val: num(p + 8)});
  }
  const strtabAddr = (entries.find((e) => e.tag === 5) || {}).val;
  const seg = loads.find((l) => strtabAddr >= l.vaddr && strtabAddr < l.vaddr + l.filesz);
  if (strtabAddr === undefined || !seg) throw new Error(`${file}: no string table for the dynamic section`);
  const strtab = strtabAddr - seg.vaddr + seg.offset;
  const str = (off) => {
    const start = strtab + off;
    const end = buf.indexOf(0, start);
    return buf.toString('utf8', start, end < 0 ? buf.length : end);
  };
  const list = (tag) => entries.filter((e) => e.tag === tag).map((e) => str(e.val));
  const split = (values) => values.flatMap((v) => v.split(':')).filter(Boolean);
  return {machine, needed: list(1), runpath: split(list(29)), rpath: split(list(15))};
}

// ---------------------------------------------------------------------------
// Explaining a failed load.

function exists(p, fsImpl = fs) {
  try {
    fsImpl.statSync(p);
    return true;
  } catch {
    return false;
  }
}

// The addon files binding.js may have loaded, existing ones only: the one next to
// binding.js (a development build) and the one in the per-platform package.
function addonCandidates({root = ROOT, resolve = require.resolve, fsImpl = fs} = {}) {
  const out = [];
  const local = path.join(root, ADDON_FILE);
  if (exists(local, fsImpl)) out.push(local);
  try {
    const pkg = resolve(`${PLATFORM_PACKAGE}/package.json`, {paths: [root]});
    const file = path.join(path.dirname(pkg), ADDON_FILE);
    if (exists(file, fsImpl)) out.push(file);
  } catch {
    // not installed
  }
  return out;
}

// Where the dynamic linker looks for libtensorflow for the given addon.
function searchDirs(addon, {env = process.env, readFile = fs.readFileSync} = {}) {
  const dirs = [];
  if (env.LD_LIBRARY_PATH) dirs.push(...env.LD_LIBRARY_PATH.split(':').filter(Boolean));
  let elf = null;
  try {
    elf = readElfDynamic(addon, readFile);
  } catch {
    // unreadable: fall back to the paths build.rs sets
  }
  const origin = path.dirname(addon);
  const entries = elf && (elf.runpath.length || elf.rpath.length)
    ? (elf.runpath.length ? elf.runpath : elf.rpath)
    : ['$ORIGIN/deps/lib', '$ORIGIN/../tfjs-node-rs/deps/lib', '$ORIGIN/../../deps/lib'];
  for (const e of entries) dirs.push(path.resolve(e.replace(/\$(ORIGIN|\{ORIGIN\})/g, origin)));
  dirs.push('the system library directories (ld.so.cache, /lib, /usr/lib)');
  return [...new Set(dirs)];
}

// Messages of an error and its causes (binding.js chains one per attempt).
function messages(err) {
  const out = [];
  const seen = new Set();
  for (let e = err; e && !seen.has(e) && out.length < 50; e = e.cause) {
    seen.add(e);
    out.push(e && typeof e.message === 'string' ? e.message : String(e));
  }
  return out;
}

function indent(lines) {
  return lines.map((l) => `  ${l}`).join('\n');
}

/**
 * Loader messages that say nothing about this install: napi's summary line, and its attempts
 * at the WebAssembly (wasi) builds, which this package never ships.
 */
const LOADER_NOISE = /^Cannot find native binding|^Cannot find module '[^']*wasi[^']*'/;

/** The Visual C++ runtime DLLs that TF's Windows DLL imports (the wheel does not ship them). */
const WINDOWS_RUNTIME = ['MSVCP140.dll', 'VCRUNTIME140.dll', 'VCRUNTIME140_1.dll'];

/** Turns an error from require('binding.js') into one clear Error. */
function explainLoadError(err, {root = ROOT, env = process.env, resolve = require.resolve, fsImpl = fs, readFile = fs.readFileSync} = {}) {
  const all = messages(err);
  const text = all.join('\n');
  const candidates = addonCandidates({root, resolve, fsImpl});
  // One line per attempt (Node's "Require stack" continuation lines say nothing new).
  const reported = all.map((m) => m.split('\n')[0]).filter((m) => !LOADER_NOISE.test(m));
  const detailsOf = (lines) => `\nThe loader reported:\n${indent(lines.slice(0, 8))}`;
  const details = detailsOf(reported);

  // glibc's dlopen error, and macOS dyld's ("Library not loaded: @rpath/<name>").
  const missing = /(libtensorflow[\w.+-]*\.so[\w.]*): cannot open shared object file/.exec(text) ||
    /Library not loaded: @rpath\/(libtensorflow[\w.+-]*\.dylib)/.exec(text);
  if (missing) {
    const addon = candidates[0] || path.join(root, ADDON_FILE);
    const dirs = searchDirs(addon, {env, readFile});
    const ownDeps = path.join(root, 'deps', 'lib');
    return loadError(
      `libtensorflow is missing: the addon ${addon} needs libtensorflow ${TF_BUILT_AGAINST} ` +
        `(${LIBS.join(' and ')}), and ${missing[1]} was not found in:\n${indent(dirs)}\n` +
        `The first require sets it up in ${ownDeps}${exists(ownDeps, fsImpl) ? ' (present but incomplete)' : ' (absent)'}. ` +
        `To set it up again, run \`${setupCommand(root)}\` (it takes TensorFlow's wheel from the cache ` +
        '~/.cache/tfjs-node-rs, or downloads it from the package index), or set ' +
        `${ENV_DIR} to a directory holding ${LIBS.join(' and ')} (e.g. site-packages/tensorflow of a ` +
        `Python tensorflow ${TF_BUILT_AGAINST}) and require the package again.` +
        detailsOf(reported.filter((m) => /libtensorflow/.test(m))),
      err,
    );
  }

  // Windows names no DLL in ERROR_MOD_NOT_FOUND ("The specified module could not be found.", and
  // Wine's "Module not found."): say which the addon needs, and which are there.
  if (/The specified module could not be found|^Module not found\./m.test(text) && candidates.length) {
    const addonDir = path.dirname(candidates[0]);
    const where = (file) => `${file} (${exists(file, fsImpl) ? 'present' : 'absent'})`;
    return loadError(
      `a DLL the addon ${candidates[0]} needs was not found (Windows does not say which). It loads ` +
        `${where(path.join(root, 'deps', 'lib', LIBRARIES.win32.libs[0]))}, which the first require sets up (run ` +
        `\`${setupCommand(root)}\` to set it up again), the stub ${where(path.join(addonDir, 'python311.dll'))} ` +
        'from the addon\'s package (reinstall it when absent), and the Visual C++ 2015-2022 Redistributable\'s ' +
        `${WINDOWS_RUNTIME.join(', ')}: install it (https://aka.ms/vs/17/release/vc_redist.x64.exe) when they are ` +
        `not in C:\\Windows\\System32.${details}`,
      err,
    );
  }

  const glibc = /version `(GLIBC(?:XX)?_[\d.]+)' not found/.exec(text);
  if (glibc) {
    return loadError(
      `the system's C/C++ runtime is too old: ${glibc[1]} is needed but not found. ` +
        `Prebuilt binaries exist only for ${SUPPORTED}.${details}`,
      err,
    );
  }

  const symbol = /undefined symbol: (\S+)/.exec(text);
  if (symbol) {
    return loadError(
      `the libtensorflow found is incompatible: it lacks the symbol ${symbol[1]}. tfjs-node-rs needs ` +
        `libtensorflow ${TF_MAJOR}.x (built against ${TF_BUILT_AGAINST}). If ${ENV_DIR} or LD_LIBRARY_PATH ` +
        'points to another TensorFlow, fix or unset it and require the package again.' +
        details,
      err,
    );
  }

  const badElf = /(invalid ELF header|wrong ELF class|file too short|ELF load command)/.exec(text);
  if (badElf) {
    return loadError(
      `the addon file${candidates.length ? ` ${candidates.join(' or ')}` : ''} is damaged or built for another ` +
        `platform (${badElf[1]}). Reinstall tfjs-node-rs (remove node_modules and run \`npm install\`).${details}`,
      err,
    );
  }

  if (!candidates.length) {
    return loadError(
      `the prebuilt addon is not installed: neither ${path.join(root, ADDON_FILE)} nor the package ` +
        `${PLATFORM_PACKAGE} (an optional dependency of tfjs-node-rs) was found. npm skips it when ` +
        'installing with --omit=optional or --no-optional, or when the lock file was made on another ' +
        'platform (https://github.com/npm/cli/issues/4828): remove node_modules and package-lock.json and ' +
        'run `npm install` again. In a development checkout, run `npm run build`.' +
        details,
      err,
    );
  }

  return loadError(`the native addon (${candidates.join(' or ')}) could not be loaded.${details}`, err);
}

/** Throws unless the loaded libtensorflow has the major version the addon needs. */
function checkTfVersion(binding) {
  let version;
  try {
    version = String(binding.tfVersion());
  } catch (err) {
    throw loadError(`the addon loaded, but asking libtensorflow for its version (TF_Version) failed: ${err.message}`, err);
  }
  const major = parseInt(version, 10);
  if (major !== TF_MAJOR) {
    throw loadError(
      `incompatible libtensorflow ${version}: tfjs-node-rs needs libtensorflow ${TF_MAJOR}.x ` +
        `(built against ${TF_BUILT_AGAINST}). If ${ENV_DIR} or LD_LIBRARY_PATH points to another ` +
        'TensorFlow, fix or unset it and require the package again.',
    );
  }
  return version;
}

/**
 * The GPU package's CUDA libraries, loaded by absolute path from <root>/cuda before the first TF
 * context is made: the GPU build of libtensorflow opens them by soname then (libcudart.so.12,
 * ...), and the dynamic linker hands it these instead of searching LD_LIBRARY_PATH and the
 * system. Nothing to do without <root>/cuda (the CPU package, or no NVIDIA driver at install:
 * TF then runs everything on the CPU), with TFJS_NODE_RS_CUDA=0, or on a machine without a driver
 * (node_modules copied there) unless TFJS_NODE_RS_CUDA=1: loading them costs ~50 ms and ~235 MB
 * of resident memory for nothing there. Returns the paths loaded.
 */
function preloadCuda(binding, {root = ROOT, env = process.env, fsImpl = fs, driver = () => nvidiaDriver({fsImpl})} = {}) {
  const dir = packageCudaDir(root);
  const mode = cudaSwitch(env, loadError);
  if (mode === 'off' || !exists(dir, fsImpl) || (mode === 'auto' && !driver())) return [];
  const libs = cudaLibraryPaths(dir);
  for (const lib of libs) {
    try {
      binding.preloadLibrary(lib);
    } catch (err) {
      throw loadError(
        `the CUDA libraries in ${dir} are incomplete or damaged: ${err.message}. To fix it, run ` +
          `\`${setupCommand(root)}\` (it unpacks them again from the cached wheels), or set ` +
          `${CUDA_ENV}=0 to run on the CPU without them.`,
        err,
      );
    }
  }
  return libs;
}

/**
 * TF_CPP_MIN_LOG_LEVEL unless the user set one: 2 (infos and warnings hidden, errors shown),
 * or 3 for the GPU package on a machine without an NVIDIA driver, where TF's CUDA build logs
 * `E ... failed call to cuInit: ... UNKNOWN ERROR (303)` when it makes its first context,
 * although running on the CPU there is what the package is meant to do. With a driver the
 * level stays 2, so that a cuInit failure there (a driver too old for CUDA 12.5) is shown.
 */
function defaultLogLevel(root, fsImpl, driver) {
  return packageName(root, fsImpl) === GPU_PACKAGE && !driver() ? '3' : '2';
}

/** This package's name in its package.json (tfjs-node-rs, tfjs-node-rs-gpu; an npm alias keeps it). */
function packageName(root, fsImpl = fs) {
  try {
    return JSON.parse(fsImpl.readFileSync(path.join(root, 'package.json'), 'utf8')).name;
  } catch {
    return 'tfjs-node-rs';
  }
}

/**
 * Windows: the addon's import of the TF DLL (and that DLL's of python311.dll) are resolved when
 * node loads the addon (LoadLibraryExW with LOAD_WITH_ALTERED_SEARCH_PATH, which searches the
 * addon's folder, the system's and then PATH; Windows has no rpath), so `dirs` go first on PATH
 * for that one load and are taken off again (child processes do not inherit them). Elsewhere the
 * addon's rpath finds them: `requireBinding()` as it is.
 */
function withLibraryPath(platform, dirs, env, requireBinding) {
  if (platform !== 'win32') return requireBinding();
  const before = env.PATH;
  env.PATH = [...dirs, ...(before ? [before] : [])].join(path.delimiter);
  try {
    return requireBinding();
  } finally {
    if (before === undefined) delete env.PATH;
    else env.PATH = before;
  }
}

/**
 * What must happen before the addon is loaded: the environment checks, libtensorflow provided at
 * first use (js/first_use.js), TF_CPP_MIN_LOG_LEVEL. Returns the addon file binding.js will load
 * (undefined when there is none: its load fails and explainLoadError says why).
 */
function prepare({
  system = detect(),
  env = process.env,
  root = ROOT,
  resolve = require.resolve,
  fsImpl = fs,
  driver = () => nvidiaDriver({fsImpl}),
  provide = provideAtFirstUse,
} = {}) {
  checkEnvironment(system);
  const addon = addonCandidates({root, resolve, fsImpl})[0];
  const addonDir = addon ? path.dirname(fsImpl.realpathSync(addon)) : null;
  provide({
    root, env, fsImpl, driver, addonDir, makeError: loadError, log: (line) => process.stderr.write(`tfjs-node-rs: ${line}\n`),
  });
  // TensorFlow logs at INFO level while starting; keep warnings and errors only
  // unless the user chose a level. Must be set before libtensorflow is loaded.
  if (env.TF_CPP_MIN_LOG_LEVEL === undefined) env.TF_CPP_MIN_LOG_LEVEL = defaultLogLevel(root, fsImpl, driver);
  return addon;
}

// Set by startLoading(): this process's load is prepared, and load() goes on from there.
let loadStarted = false;

/**
 * The function that starts loading an addon file on a native thread (the preload addon beside
 * it, preload/), or null where that does not help: with one core (the load would only compete
 * with tfjs's JS), on Windows (the addon finds TF's DLLs through PATH, set for the main thread's
 * load only), on Bun and Deno (not measured there), or with TFJS_NODE_RS_BACKGROUND_LOAD=0. The
 * function returns whether the load started: not without the preload addon's file, or when it
 * cannot be loaded (the permission model without --allow-addons); then the main thread loads.
 */
function backgroundLoader({
  env = process.env,
  platform = process.platform,
  cores = require('os').availableParallelism(),
  versions = process.versions,
  fsImpl = fs,
  dlopen = process.dlopen,
} = {}) {
  const hostIsNode = !versions.bun && !versions.deno;
  if (env.TFJS_NODE_RS_BACKGROUND_LOAD === '0' || !hostIsNode || platform === 'win32' || cores < 2) return null;
  return (addon) => {
    const preload = path.join(path.dirname(addon), PRELOAD_FILE);
    if (!exists(preload, fsImpl)) return false;
    try {
      const module = {exports: {}};
      dlopen(module, preload);
      module.exports.loadInBackground(addon);
      return true;
    } catch {
      return false;
    }
  };
}

/**
 * Called by js/index.js before tfjs's JS loads: prepares the load and starts loading the addon
 * file binding.js will load on a native thread (`loadInBackground`, from backgroundLoader()).
 * Loading it maps libtensorflow and runs its static initializers, which register every op and
 * kernel: 65-90 ms here, the largest part of `require`, which the main thread would otherwise
 * spend before compiling tfjs's JS (another 85 ms). When the main thread then loads the same
 * file, the dynamic linker finds it loaded, or holds the main thread until that load is done:
 * either way the file is loaded once. Where it does not start (see backgroundLoader), the main
 * thread loads it first, which keeps the order that gives TF's set-ups the time tfjs's JS takes
 * (docs/architecture.md). Returns whether the load started in the background.
 */
function startLoading({loadInBackground = backgroundLoader(), ...options} = {}) {
  const addon = prepare(options);
  loadStarted = true;
  return Boolean(addon && loadInBackground && loadInBackground(addon));
}

/**
 * Loads the addon: prepare() unless startLoading() did, then require, error explanation, the
 * TF_Version check and the CUDA libraries. Returns the binding, with `TF_Version` set.
 */
function load({
  prepared = loadStarted,
  system,
  env = process.env,
  requireBinding = () => require('../binding.js'),
  root = ROOT,
  resolve = require.resolve,
  fsImpl = fs,
  readFile = fs.readFileSync,
  driver = () => nvidiaDriver({fsImpl}),
  ...options
} = {}) {
  if (!prepared) prepare({system, env, root, resolve, fsImpl, driver, ...options});
  const platform = system ? system.platform : process.platform;
  let binding;
  try {
    // Windows: the root's deps/lib (the first use makes no deps link beside the addon there).
    binding = withLibraryPath(platform, [path.join(root, 'deps', 'lib')], env, requireBinding);
  } catch (err) {
    throw explainLoadError(err, {root, env, resolve, fsImpl, readFile});
  }
  // tfjs-node's binding carries the linked version as a `TF_Version` string, and client
  // libraries read it to tell that tfjs-node is present: @vladmandic/human (through
  // `tf.backend().binding.TF_Version`) otherwise switches to tfjs's pure-JS `cpu` backend.
  binding.TF_Version = checkTfVersion(binding);
  preloadCuda(binding, {root, env, fsImpl, driver});
  return binding;
}

module.exports = {
  load,
  startLoading,
  backgroundLoader,
  detect,
  glibcFromMaps,
  checkEnvironment,
  explainLoadError,
  checkTfVersion,
  preloadCuda,
  versionBelow,
  readElfDynamic,
  searchDirs,
  addonCandidates,
  ERROR_CODE,
  MIN_NAPI,
  MIN_GLIBC,
  TF_MAJOR,
  SUPPORTED,
  PLATFORM_PACKAGE,
  ADDON_FILE,
  PRELOAD_FILE,
};
