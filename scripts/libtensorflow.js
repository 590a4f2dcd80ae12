#!/usr/bin/env node
'use strict';
// Provides libtensorflow (the TensorFlow 2.21.0 C library) under <root>/deps/:
//
//   deps/lib/libtensorflow_cc.so.2, deps/lib/libtensorflow_framework.so.2,
//   deps/lib/libtensorflow.so -> libtensorflow_cc.so.2,
//   deps/lib/pkgconfig/tensorflow.pc, deps/include/ (the C API headers),
//   deps/.complete (JSON marker, written last).
//
// Sources, in order:
//   1. $TFJS_NODE_RS_LIBTENSORFLOW: a directory holding libtensorflow_cc.so.2 and
//      libtensorflow_framework.so.2 (e.g. site-packages/tensorflow of a Python
//      TensorFlow); deps/ is made in the project, the libs symlinked, headers copied
//      from its include/.
//   2. Otherwise one unpacked copy per machine, user, version and platform, the shared
//      copy ${XDG_CACHE_HOME:-~/.cache}/tfjs-node-rs/libtensorflow-2.21.0-<linux-x64|linux-arm64>/
//      (the same layout as deps/), and deps/ is a symlink to it. It is unpacked once from
//      the platform's wheel (PLATFORMS below: tensorflow_cpu-2.21.0-*_x86_64.whl,
//      tensorflow-2.21.0-*_aarch64.whl) in ${XDG_CACHE_HOME:-~/.cache}/tfjs-node-rs/,
//      which, when absent, is downloaded there from pip's index by scripts/pypi.js
//      (no python3 needed), or else by `python3 -m pip download`. Unpacking strips
//      the libraries' static symbol tables (scripts/strip_symbols.js): 853 -> 634 MB, and on
//      x64 binds their references to their own TF symbols (scripts/prebind.js), which halves
//      the time the dynamic linker takes to load them.
//      The macOS arm64 copy (libtensorflow-2.21.0-darwin-arm64/, from the macosx_12_0_arm64
//      wheel) is made on Linux too, for cross-building the macOS addon (scripts/build.js
//      --target aarch64-apple-darwin): its lib/ holds libtensorflow_cc.2.dylib,
//      libtensorflow_framework.2.dylib and libtensorflow.dylib -> libtensorflow_cc.2.dylib
//      (LIBRARIES in js/libtensorflow_facts.js), unstripped (the stripper reads ELF only).
//      On Windows (and on Linux for the Windows cross build), libtensorflow-2.21.0-win32-x64/lib/
//      holds _pywrap_tensorflow_common.dll from the tensorflow-cpu win_amd64 wheel's
//      tensorflow/python/ (TF's whole C API), unstripped, with no link beside it; deps/ is a
//      junction to it there.
//      With $TFJS_NODE_RS_COPY_LIBTENSORFLOW=1, deps/ is a copy of the shared copy
//      instead of a link (container builds that copy node_modules between stages).
//
// The wheel is a zip file; it is read here in plain Node (no unzip, no python).
// Every tree is built in <name>.tmp-<pid>/ and renamed into place at the end, so an
// interrupted run never leaves a tree that looks usable; one lock directory in the
// cache makes concurrent installs download and unpack once.
//
// Run directly (`node scripts/libtensorflow.js`) it does the same as a CLI.

const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const {spawn, spawnSync} = require('child_process');
const {pipeline} = require('stream/promises');
const {downloadFromIndex, INDEX_ERROR} = require('./pypi');
const {stripSymbols, readAt} = require('./strip_symbols');
const {prebind, definedNames} = require('./prebind');

const {TF_VERSION, MIN_GLIBC, LIBS, librariesOf, ENV_DIR, COPY_ENV, GPU_PACKAGE, CUDA_WHEELS, CUDA_ENV, MIN_DRIVER, ADDON_PLATFORMS} = require('../js/libtensorflow_facts');
const {cudaLibraryPaths, packageCudaDir, nvidiaDriver, cudaSwitch} = require('../js/cuda');
const {versionBelow, SUPPORTED, addonCandidates} = require('../js/native_loader_core');
// Per supported platform (`${process.platform}-${process.arch}`, and `-gpu` for the NVIDIA GPU
// package's): the PyPI project whose wheel holds libtensorflow (Linux arm64 has no
// tensorflow-cpu: its plain tensorflow wheel is the CPU build; on x64 the plain tensorflow
// wheel is the CUDA build, which runs on the CPU where there is no GPU), that wheel's platform
// tag and size, and the two libraries' size as unpacked and once stripped. Each has the addon of
// its machine (ADDON_PLATFORMS; one addon serves both x64 variants). macOS's libraries (Mach-O)
// and Windows' DLL (PE) are left unstripped: the stripper reads ELF.
const PLATFORMS = {
  'linux-x64': {project: 'tensorflow-cpu', wheelTag: 'manylinux_2_27_x86_64', wheelMB: 274, unpackedMB: 853, libsMB: 634},
  'linux-arm64': {project: 'tensorflow', wheelTag: 'manylinux_2_27_aarch64', wheelMB: 282, unpackedMB: 883, libsMB: 598},
  'linux-x64-gpu': {project: 'tensorflow', wheelTag: 'manylinux_2_27_x86_64', wheelMB: 546, unpackedMB: 1202, libsMB: 969},
  'darwin-arm64': {project: 'tensorflow', wheelTag: 'macosx_12_0_arm64', wheelMB: 224, unpackedMB: 741, libsMB: 741},
  'win32-x64': {project: 'tensorflow-cpu', wheelTag: 'win_amd64', wheelMB: 351, unpackedMB: 1008, libsMB: 1008},
};
// The OS part of a PLATFORMS key ('linux', 'darwin'), as process.platform spells it.
const osOf = (key) => key.split('-')[0];
// The libraries (LIBRARIES entry) of this machine's deps/.
const HOST_LIBRARIES = librariesOf(process.platform);
// The libraries are the same in every CPython build of the wheel; cp311 is the one
// pip is asked for, and the first choice on the index.
const PREFERRED_PYTHON = 'cp311';
// pip download's options for a wheel of that CPython and `platformTag`.
const pipTarget = (platformTag) => [
  '--python-version', `${PREFERRED_PYTHON[2]}.${PREFERRED_PYTHON.slice(3)}`,
  '--implementation', 'cp',
  '--abi', PREFERRED_PYTHON,
  '--platform', platformTag,
];

/**
 * The wheel of platform `key` ('linux-x64', 'darwin-arm64', ...): its project, name pattern,
 * pip target, and the libraries (LIBRARIES entry) it holds.
 */
function wheelSpec(key) {
  const p = PLATFORMS[key];
  // A wheel's file name spells the project with '_' for '-' (PEP 427).
  const stem = p.project.replace(/-/g, '_');
  return {
    ...p,
    key,
    version: TF_VERSION,
    libraries: librariesOf(osOf(key)),
    re: new RegExp(`^${stem}-2\\.21\\.0-(cp3\\d+)-cp3\\d+-${p.wheelTag}\\.whl$`),
    pipTarget: pipTarget(p.wheelTag),
    describe: `${p.project} ${TF_VERSION} wheel for ${p.wheelTag}`,
  };
}

/** The Rust target of this machine's addon, or undefined on an unsupported machine. */
function hostTarget() {
  return (ADDON_PLATFORMS[hostPlatform()] || {}).rustTarget;
}

/** The platform key whose addon is built for Rust target `triple`, or undefined. */
function platformOfTarget(triple) {
  return Object.keys(ADDON_PLATFORMS).find((key) => ADDON_PLATFORMS[key].rustTarget === triple);
}
const SETUP = 'TFJS_NODE_RS_SETUP';
const ZIP_CORRUPT = 'TFJS_NODE_RS_ZIP_CORRUPT';
const MB = 1024 * 1024;
// Room to unpack platform `key`'s libraries, and for a copy of them once stripped.
const unpackBytes = (key) => Math.ceil(PLATFORMS[key].unpackedMB * 1.05) * MB;
const copyBytes = (key) => Math.ceil(PLATFORMS[key].libsMB * 1.05) * MB;
const EXTRACT_CONCURRENCY = 4;

const DEFAULT_ROOT = path.resolve(__dirname, '..');
// Links to folders (deps/ to the shared copy, the addon's deps/ to the root's) are junctions on
// Windows, which any user may make (a symbolic link needs Developer Mode or an administrator);
// elsewhere the type is ignored.
const FOLDER_LINK = 'junction';

function setupError(message, cause) {
  const err = new Error(message);
  err.code = SETUP;
  if (cause) err.cause = cause;
  return err;
}

function zipError(message) {
  const err = new Error(message);
  err.code = ZIP_CORRUPT;
  return err;
}

function defaultLog(message) {
  process.stderr.write(`tfjs-node-rs: ${message}\n`);
}

function libtensorflowDir(root = DEFAULT_ROOT) {
  return path.join(path.resolve(root), 'deps', 'lib');
}

function cacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, 'tfjs-node-rs');
}

// ---------------------------------------------------------------------------
// What to take from a TensorFlow tree: paths relative to its include/ folder.

// The C API's headers, and the two that c/kernels.h includes from elsewhere, so that op
// libraries for tf.node.loadOpLibrary build against deps/include alone.
const KERNEL_API_HEADERS = [
  'tsl/platform/platform.h',
  'tensorflow/core/common_runtime/next_pluggable_device/c/tf_rendezvous_c_api.h',
];

/**
 * The version of how a wheel is unpacked, kept in the marker; raised when it changes (the header
 * rules below take more headers; 3: the Linux x64 libraries' own references bound at unpacking,
 * scripts/prebind.js; 4: also those to templates of TF's types and to TF functions' locals; 5:
 * also those to Eigen's names), so that a tree unpacked by earlier rules is made again.
 */
const UNPACK_RULES = 5;

function wantedHeader(rel) {
  if (rel.endsWith('/') || rel.split('/').some((p) => p === '..' || p === '')) return false;
  return (
    rel.startsWith('tensorflow/c/') ||
    KERNEL_API_HEADERS.includes(rel) ||
    /^tsl\/platform\/ctstring[^/]*\.h$/.test(rel) ||
    /^tensorflow\/core\/platform\/ctstring[^/]*\.h$/.test(rel) ||
    /^xla\/tsl\/c\/[^/]+$/.test(rel) ||
    /^tensorflow\/compiler\/xla\/tsl\/c\/[^/]+$/.test(rel)
  );
}

// Folders (relative to include/) that can hold wanted headers, for walking a
// TensorFlow install without visiting its thousands of other headers.
const WANTED_DIRS = new Set([
  'tensorflow', 'tensorflow/c', 'tensorflow/core', 'tensorflow/core/platform',
  'tensorflow/compiler', 'tensorflow/compiler/xla', 'tensorflow/compiler/xla/tsl',
  'tensorflow/compiler/xla/tsl/c', 'tsl', 'tsl/platform', 'xla', 'xla/tsl', 'xla/tsl/c',
  ...KERNEL_API_HEADERS.flatMap((h) => h.split('/').slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/'))),
]);

function wantedDir(rel) {
  return WANTED_DIRS.has(rel) || rel.startsWith('tensorflow/c/');
}

// Maps a wheel entry name to its path under deps/, or null when not wanted; `libraries`: the
// LIBRARIES entry of the wheel's OS.
function wheelTarget(name, {libs, wheelDir} = HOST_LIBRARIES) {
  for (const lib of libs) if (name === `${wheelDir}/${lib}`) return `lib/${lib}`;
  const prefix = 'tensorflow/include/';
  if (name.startsWith(prefix)) {
    const rel = name.slice(prefix.length);
    if (wantedHeader(rel)) return `include/${rel}`;
  }
  return null;
}

// ---------------------------------------------------------------------------
// Zip reading (enough for wheels): EOCD, ZIP64, central directory, stored and
// deflated entries, streamed to disk with size and CRC-32 checks.

const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;

/** Zip bytes at `position`, or a ZIP_CORRUPT error if the file ends first. */
function readZipAt(fd, position, length) {
  return readAt(fd, position, length, (at) => zipError(`unexpected end of file at byte ${at}`));
}

function u64(buf, offset) {
  const value = buf.readBigUInt64LE(offset);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw zipError('ZIP64 value too large');
  return Number(value);
}

// Returns [{ name, method, flags, crc, compressedSize, size, localOffset, mode }].
function listZip(file) {
  let fd;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw err.code === 'ENOENT' ? zipError(`${file} does not exist`) : err;
  }
  try {
    const fileSize = fs.fstatSync(fd).size;
    if (fileSize < 22) throw zipError('file too small to be a zip archive');
    const tailLen = Math.min(fileSize, 22 + 0xffff);
    const tailStart = fileSize - tailLen;
    const tail = readZipAt(fd, tailStart, tailLen);
    let eocd = -1;
    for (let i = tailLen - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === SIG_EOCD && i + 22 + tail.readUInt16LE(i + 20) <= tailLen) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw zipError('no end-of-central-directory record (not a zip file, or truncated)');
    let entries = tail.readUInt16LE(eocd + 10);
    let cdSize = tail.readUInt32LE(eocd + 12);
    let cdOffset = tail.readUInt32LE(eocd + 16);
    if (entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      const locPos = tailStart + eocd - 20;
      if (locPos < 0) throw zipError('ZIP64 locator missing');
      const loc = readZipAt(fd, locPos, 20);
      if (loc.readUInt32LE(0) !== SIG_ZIP64_LOCATOR) throw zipError('ZIP64 locator missing');
      const z64Pos = u64(loc, 8);
      const z64 = readZipAt(fd, z64Pos, 56);
      if (z64.readUInt32LE(0) !== SIG_ZIP64_EOCD) throw zipError('bad ZIP64 end-of-central-directory record');
      entries = u64(z64, 32);
      cdSize = u64(z64, 40);
      cdOffset = u64(z64, 48);
    }
    if (cdOffset + cdSize > fileSize) throw zipError('central directory lies past the end of the file (truncated?)');
    const cd = readZipAt(fd, cdOffset, cdSize);
    const out = [];
    let p = 0;
    for (let i = 0; i < entries; i++) {
      if (p + 46 > cd.length || cd.readUInt32LE(p) !== SIG_CENTRAL) throw zipError(`bad central directory entry #${i}`);
      const madeBy = cd.readUInt16LE(p + 4) >> 8;
      const flags = cd.readUInt16LE(p + 8);
      const method = cd.readUInt16LE(p + 10);
      const crc = cd.readUInt32LE(p + 16);
      let compressedSize = cd.readUInt32LE(p + 20);
      let size = cd.readUInt32LE(p + 24);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      const external = cd.readUInt32LE(p + 38);
      let localOffset = cd.readUInt32LE(p + 42);
      const nameEnd = p + 46 + nameLen;
      if (nameEnd + extraLen + commentLen > cd.length) throw zipError(`central directory entry #${i} overruns`);
      const name = cd.toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, nameEnd);
      // ZIP64 extended information: present values replace the 0xffffffff ones, in order.
      let e = nameEnd;
      const extraEnd = nameEnd + extraLen;
      while (e + 4 <= extraEnd) {
        const id = cd.readUInt16LE(e);
        const len = cd.readUInt16LE(e + 2);
        if (id === 0x0001) {
          let q = e + 4;
          const take = () => {
            if (q + 8 > e + 4 + len) throw zipError(`bad ZIP64 extra field in ${name}`);
            const v = u64(cd, q);
            q += 8;
            return v;
          };
          if (size === 0xffffffff) size = take();
          if (compressedSize === 0xffffffff) compressedSize = take();
          if (localOffset === 0xffffffff) localOffset = take();
        }
        e += 4 + len;
      }
      const mode = madeBy === 3 ? (external >>> 16) & 0o7777 : 0;
      out.push({name, method, flags, crc, compressedSize, size, localOffset, mode});
      p = extraEnd + commentLen;
    }
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

async function extractEntry(file, fd, entry, dest) {
  if (entry.flags & 0x1) throw zipError(`${entry.name} is encrypted`);
  if (entry.method !== 0 && entry.method !== 8) {
    throw zipError(`${entry.name} uses unsupported compression method ${entry.method}`);
  }
  const local = readZipAt(fd, entry.localOffset, 30);
  if (local.readUInt32LE(0) !== SIG_LOCAL) throw zipError(`bad local header for ${entry.name}`);
  const start = entry.localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  if (entry.method === 0 && entry.compressedSize !== entry.size) {
    throw zipError(`stored entry ${entry.name} has mismatched sizes`);
  }
  fs.mkdirSync(path.dirname(dest), {recursive: true});
  const stages = [];
  if (entry.compressedSize > 0) {
    stages.push(fs.createReadStream(file, {
      start,
      end: start + entry.compressedSize - 1,
      highWaterMark: MB,
    }));
  } else {
    stages.push(async function* empty() {}());
  }
  if (entry.method === 8) {
    stages.push(zlib.createInflateRaw({chunkSize: 256 * 1024}));
  }
  let crc = 0;
  let size = 0;
  const haveCrc = typeof zlib.crc32 === 'function';
  stages.push(async function* check(source) {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > entry.size) throw zipError(`${entry.name} inflates past its recorded size`);
      if (haveCrc) crc = zlib.crc32(chunk, crc);
      yield chunk;
    }
  });
  const mode = (entry.mode & 0o777) | 0o644; // readable by all, whatever the archive says
  stages.push(fs.createWriteStream(dest, {mode}));
  try {
    await pipeline(stages);
  } catch (err) {
    // zlib's own errors (Z_DATA_ERROR, Z_BUF_ERROR: truncated) mean bad data; file
    // system errors (ENOSPC, EIO, ...) pass through unchanged.
    if (/^Z_/.test(err.code || '')) {
      throw zipError(`cannot inflate ${entry.name}: ${err.message}`);
    }
    throw err;
  }
  if (size !== entry.size) throw zipError(`${entry.name}: got ${size} bytes, expected ${entry.size}`);
  if (haveCrc && crc >>> 0 !== entry.crc) throw zipError(`${entry.name}: CRC-32 mismatch`);
}

// Extracts the entries for which targetOf(name) returns a relative path into destDir.
// Returns the list of { name, target, size } written.
async function extractZip(file, destDir, targetOf, {concurrency = EXTRACT_CONCURRENCY} = {}) {
  const jobs = [];
  for (const entry of listZip(file)) {
    if (entry.name.endsWith('/')) continue;
    const target = targetOf(entry.name);
    if (!target) continue;
    const dest = path.resolve(destDir, target);
    if (!dest.startsWith(path.resolve(destDir) + path.sep)) throw zipError(`unsafe entry name ${entry.name}`);
    jobs.push({entry, target, dest});
  }
  // Largest first, so the big library starts right away.
  jobs.sort((a, b) => b.entry.size - a.entry.size);
  const fd = fs.openSync(file, 'r');
  try {
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const job = jobs[next++];
        await extractEntry(file, fd, job.entry, job.dest);
      }
    };
    await Promise.all(Array.from({length: Math.min(concurrency, jobs.length)}, worker));
  } finally {
    fs.closeSync(fd);
  }
  return jobs.map((j) => ({name: j.entry.name, target: j.target, size: j.entry.size}));
}

// ---------------------------------------------------------------------------
// Platform, disk space, stale temporaries.

function detectPlatform() {
  let glibc;
  if (process.platform === 'linux') {
    try {
      glibc = process.report.getReport().header.glibcVersionRuntime;
    } catch {
      glibc = undefined;
    }
  }
  return {platform: process.platform, arch: process.arch, glibc};
}

// `${process.platform}-${process.arch}` of this machine.
function hostPlatform() {
  return `${process.platform}-${process.arch}`;
}

// The platform key of a supported {platform, arch, glibc}; throws a setup error otherwise.
function checkPlatform({platform, arch, glibc}) {
  const libc = platform !== 'linux' ? 'n/a' : glibc ? `glibc ${glibc}` : 'not glibc (musl?)';
  const detected = `detected platform=${platform}, arch=${arch}, libc=${libc}`;
  const key = `${platform}-${arch}`;
  if (!Object.hasOwn(PLATFORMS, key) || (platform === 'linux' && !glibc)) {
    throw setupError(`unsupported platform: tfjs-node-rs has prebuilt binaries only for ${SUPPORTED} (${detected}).`);
  }
  if (platform === 'linux' && versionBelow(glibc, MIN_GLIBC)) {
    throw setupError(
      `unsupported platform: libtensorflow ${TF_VERSION} needs glibc >= ${MIN_GLIBC.join('.')} ` +
        `(${detected}).`,
    );
  }
  return key;
}

function freeBytes(dir) {
  try {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Infinity;
  }
}

function fmtMB(bytes) {
  return `${Math.ceil(bytes / MB)} MB`;
}

function noSpaceError(where, needed, cause) {
  return setupError(
    `not enough disk space in ${where}: libtensorflow ${TF_VERSION} needs about ${fmtMB(needed)} there ` +
      `(${fmtMB(Math.max(0, freeBytes(where)))} free). Free some space and try again.`,
    cause,
  );
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

// Removes <base>.tmp-<pid>/ and <base>.old-<pid>/ (next to <dir>/<base>) left by
// runs that died.
function removeStale(dir, base) {
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^(.+)\.(tmp|old)-(\d+)$/.exec(name);
    if (!m || m[1] !== base) continue;
    const pid = Number(m[3]);
    const full = path.join(dir, name);
    let old;
    try {
      old = Date.now() - fs.lstatSync(full).mtimeMs > 6 * 3600 * 1000;
    } catch {
      continue;
    }
    if (pid === process.pid || !pidAlive(pid) || old) fs.rmSync(full, {recursive: true, force: true});
  }
}

// ---------------------------------------------------------------------------
// The marker and the fast path.

function readMarker(deps) {
  try {
    return JSON.parse(fs.readFileSync(path.join(deps, '.complete'), 'utf8'));
  } catch {
    return null;
  }
}

function libSizes(libDir, libs = LIBS) {
  const sizes = {};
  for (const lib of libs) sizes[lib] = fs.statSync(path.join(libDir, lib)).size;
  return sizes;
}

// True when deps/ is complete for this version (and, when $TFJS_NODE_RS_LIBTENSORFLOW
// is set, was made from that directory); `libraries`: the LIBRARIES entry of its OS.
function isComplete(deps, envDir, {libs, linkName} = HOST_LIBRARIES) {
  const marker = readMarker(deps);
  if (!marker || marker.version !== TF_VERSION) return false;
  if (envDir && marker.source !== path.resolve(envDir)) return false;
  try {
    const sizes = libSizes(path.join(deps, 'lib'), libs);
    for (const lib of libs) {
      if (!sizes[lib] || (marker.libs && marker.libs[lib] !== sizes[lib])) return false;
    }
    if (linkName) fs.statSync(path.join(deps, 'lib', linkName));
    fs.statSync(path.join(deps, 'lib', 'pkgconfig', 'tensorflow.pc'));
    // A tree made from a wheel by earlier rules is made again.
    if (marker.kind === 'wheel' && marker.unpackRules !== UNPACK_RULES) return false;
  } catch {
    return false;
  }
  return true;
}

function pcText(deps) {
  return [
    `prefix=${deps}`,
    `libdir=${path.join(deps, 'lib')}`,
    `includedir=${path.join(deps, 'include')}`,
    '',
    'Name: tensorflow',
    'Description: TensorFlow C library (libtensorflow), provided by tfjs-node-rs',
    `Version: ${TF_VERSION}`,
    'Libs: -L${libdir} -ltensorflow',
    'Cflags: -I${includedir}',
    '',
  ].join('\n');
}

function writeFileAtomic(file, text) {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

// The checkout moved since deps/ was made: only the absolute paths in the .pc
// file and the marker are stale; rewrite them.
function relocate(deps, marker) {
  writeFileAtomic(path.join(deps, 'lib', 'pkgconfig', 'tensorflow.pc'), pcText(deps));
  writeFileAtomic(path.join(deps, '.complete'), JSON.stringify({...marker, deps}, null, 2) + '\n');
}

// ---------------------------------------------------------------------------
// Sources.

/**
 * Makes `dest` lead to the file `src`: a symbolic link, or on Windows (where one needs Developer
 * Mode or an administrator) a hard link, or a copy across volumes.
 */
function linkFile(src, dest) {
  if (process.platform !== 'win32') return fs.symlinkSync(src, dest);
  try {
    return fs.linkSync(src, dest);
  } catch (err) {
    if (err.code !== 'EXDEV') throw err;
    return fs.copyFileSync(src, dest);
  }
}

function fromDirectory(dir, tmp, log) {
  // A Python TensorFlow's tensorflow/ folder keeps them where its wheel does (Windows: python/).
  const inWheel = path.relative('tensorflow', HOST_LIBRARIES.wheelDir);
  const missingIn = (folder) => LIBS.filter((lib) => {
    try {
      return !fs.statSync(path.join(folder, lib)).isFile();
    } catch {
      return true;
    }
  });
  const from = [dir, path.join(dir, inWheel)].find((folder) => missingIn(folder).length === 0);
  if (from === undefined) {
    throw setupError(
      `${ENV_DIR}=${dir} does not hold ${missingIn(dir).join(' and ')}. Point it to a directory that holds ` +
        `${LIBS.join(' and ')} (e.g. the tensorflow/ folder of a Python tensorflow ${TF_VERSION} install), ` +
        `or unset it to download libtensorflow.`,
    );
  }
  log(`using libtensorflow from ${ENV_DIR}=${dir}`);
  const lib = path.join(tmp, 'lib');
  fs.mkdirSync(lib, {recursive: true});
  for (const name of LIBS) linkFile(path.join(from, name), path.join(lib, name));
  const include = path.join(dir, 'include');
  let headers = 0;
  const walk = (rel) => {
    let items;
    try {
      items = fs.readdirSync(path.join(include, rel), {withFileTypes: true});
    } catch {
      return;
    }
    for (const item of items) {
      const childRel = rel ? `${rel}/${item.name}` : item.name;
      if (item.isDirectory()) {
        if (wantedDir(childRel)) walk(childRel);
      } else if (wantedHeader(childRel)) {
        const dest = path.join(tmp, 'include', childRel);
        fs.mkdirSync(path.dirname(dest), {recursive: true});
        fs.copyFileSync(path.join(include, childRel), dest);
        headers++;
      }
    }
  };
  walk('');
  return {source: dir, kind: 'directory', headers};
}

function findCachedWheel(cache, spec) {
  let names;
  try {
    names = fs.readdirSync(cache);
  } catch {
    return null;
  }
  const wheel = names.filter((n) => spec.re.test(n)).sort(byPreference(spec))[0];
  return wheel ? path.join(cache, wheel) : null;
}

// Orders spec's wheels: the preferred CPython build first, then by name.
function byPreference(spec) {
  const rank = (name) => (spec.re.exec(name)[1] === PREFERRED_PYTHON ? 0 : 1);
  return (a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

function runCapture(cmd, args, {env, log, forward, label = cmd}) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(cmd, args, {env, stdio: ['ignore', 'pipe', 'pipe']});
    } catch (error) {
      resolve({error, status: null, output: ''});
      return;
    }
    let output = '';
    const take = (chunk) => {
      const text = chunk.toString();
      output = (output + text).slice(-64 * 1024);
      if (forward) for (const line of text.split('\n')) if (line.trim()) log(`  ${label}: ${line.trimEnd()}`);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (error) => resolve({error, status: null, output}));
    child.on('close', (status, signal) => resolve({error: null, status, signal, output}));
  });
}

function lastLines(text, n = 8) {
  return text.trim().split('\n').slice(-n).map((l) => `    ${l.trimEnd()}`).join('\n');
}

const PYTHON_HINT =
  `install python3 with pip, or set ${ENV_DIR} to a directory holding ${LIBS.join(' and ')}`;

// Why python3 -m pip cannot run, or null when it can.
function pipUnavailable(env) {
  const probe = spawnSync('python3', ['-m', 'pip', '--version'], {env, encoding: 'utf8'});
  if (probe.error) {
    return probe.error.code === 'ENOENT' ? 'python3 was not found on PATH' : `python3 failed to start (${probe.error.message})`;
  }
  if (probe.status !== 0) {
    return `python3 has no pip (\`python3 -m pip --version\` failed:\n${lastLines(`${probe.stdout || ''}${probe.stderr || ''}`, 3)}\n)`;
  }
  return null;
}

async function pipDownload(cache, spec, {env, log}) {
  const partial = path.join(cache, `download-${process.pid}`);
  fs.rmSync(partial, {recursive: true, force: true});
  const args = [
    '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', ...spec.pipTarget,
    '--disable-pip-version-check', '--no-input', '--progress-bar', 'off',
    `${spec.project}==${spec.version}`, '-d', partial,
  ];
  log(`downloading ${spec.describe} (~${spec.wheelMB} MB) with pip into ${cache} ...`);
  const started = Date.now();
  const res = await runCapture('python3', args, {env, log, forward: true, label: 'pip'});
  try {
    const got = res.status === 0 ? fs.readdirSync(partial).filter((n) => spec.re.test(n)) : [];
    if (res.status !== 0 || !got.length) {
      if (/No space left on device|ENOSPC|Errno 28/.test(res.output)) throw noSpaceError(cache, wheelBytes(spec));
      const what = res.error
        ? `could not run python3 (${res.error.message})`
        : res.status !== 0
          ? `pip exited with ${res.signal ? `signal ${res.signal}` : `code ${res.status}`}`
          : `pip finished but left no ${spec.describe}`;
      throw setupError(
        `downloading ${spec.project}==${spec.version} failed: ${what}. pip said:\n${lastLines(res.output)}\n` +
          `Check network access to PyPI (or pip's index settings), or set ${ENV_DIR} to a directory ` +
          `holding ${LIBS.join(' and ')}.`,
      );
    }
    const dest = path.join(cache, got[0]);
    fs.renameSync(path.join(partial, got[0]), dest);
    log(`downloaded ${got[0]} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return dest;
  } finally {
    fs.rmSync(partial, {recursive: true, force: true});
  }
}

// The wheel to take from an index listing: spec's platform, the preferred build first.
function pickWheel(files, spec) {
  const order = byPreference(spec);
  const wheels = files.filter((f) => spec.re.test(f.filename));
  wheels.sort((a, b) => order(a.filename, b.filename));
  return wheels[0] || null;
}

// Room for the wheel's download, with some to spare.
function wheelBytes(spec) {
  return Math.ceil(spec.wheelMB * 1.1) * MB;
}

// Downloads the wheel into the cache: from pip's index in Node, else with pip.
// `index` passes options to scripts/pypi.js (retries, retryDelayMs).
async function downloadWheel(cache, spec, {env, log, index = {}}) {
  try {
    fs.mkdirSync(cache, {recursive: true});
  } catch (err) {
    throw setupError(`cannot create the download cache ${cache}: ${err.message}`, err);
  }
  if (freeBytes(cache) < wheelBytes(spec)) throw noSpaceError(cache, wheelBytes(spec));
  let indexFailure;
  try {
    return await downloadFromIndex({
      project: spec.project,
      pick: (files) => pickWheel(files, spec),
      describe: spec.describe,
      dir: cache,
      env,
      log,
      ...index,
    });
  } catch (err) {
    if (err.code !== INDEX_ERROR) throw err;
    indexFailure = err.message;
  }
  const noPip = pipUnavailable(env);
  if (noPip) {
    throw setupError(
      `cannot download libtensorflow: ${indexFailure}. The fallback, python3 with pip, is not available ` +
        `either: ${noPip}. To fix it, check access to the package index (PIP_INDEX_URL or index-url in ` +
        `pip.conf, HTTPS_PROXY, PIP_CERT), or copy a ${spec.describe} into ` +
        `${cache}, or ${PYTHON_HINT}.`,
    );
  }
  log(`downloading from the index failed (${indexFailure}); trying pip`);
  return pipDownload(cache, spec, {env, log});
}

async function extractWheel(wheel, tmp, log, spec) {
  const wanted = spec.libraries.libs;
  log(`extracting libtensorflow ${TF_VERSION} from ${wheel} ...`);
  const started = Date.now();
  const written = await extractZip(wheel, tmp, (name) => wheelTarget(name, spec.libraries));
  const libs = written.filter((w) => w.target.startsWith('lib/'));
  if (libs.length !== wanted.length) throw zipError(`${path.basename(wheel)} does not contain ${wanted.join(' and ')}`);
  const headers = written.length - libs.length;
  const stripped = [];
  // The stripper cuts ELF files only; the macOS wheel's Mach-O libraries stay as they are
  // (their symbol tables are also what scripts/macho.js checks the addon against).
  const elf = osOf(spec.key) === 'linux';
  const format = {darwin: 'Mach-O', win32: 'PE'}[osOf(spec.key)];
  for (const lib of elf ? libs : []) {
    const r = stripSymbols(path.join(tmp, lib.target));
    if (!r.skipped) stripped.push(`${path.basename(lib.target)} ${fmtMB(r.before)} -> ${fmtMB(r.after)}`);
  }
  const bound = elf ? prebindLibraries(path.join(tmp, 'lib'), wanted) : [];
  log(
    `extracted ${libs.length} libraries and ${headers} headers in ${((Date.now() - started) / 1000).toFixed(1)} s` +
      `${stripped.length ? ` (symbol tables stripped: ${stripped.join(', ')})` : ''}` +
      `${bound.length ? ` (own references bound: ${bound.join(', ')})` : ''}` +
      `${elf ? '' : ` (${format}: symbol tables kept)`}`,
  );
  return {source: wheel, kind: 'wheel', headers};
}

/**
 * Binds each library's references to its own TF symbols (scripts/prebind.js), in the order the
 * addon's DT_NEEDED list names them (libs: libtensorflow_cc first, the framework it needs
 * second): a library's lookups would find the names of those searched before it first. Returns
 * what it did, for the log; x86-64 only (other machines are left as they are).
 */
function prebindLibraries(libDir, libs) {
  const searched = [...libs].reverse().map((lib) => path.join(libDir, lib));
  const earlier = new Set();
  const done = [];
  for (const [k, file] of searched.entries()) {
    const r = prebind(file, earlier);
    if (r.skipped) return [];
    done.push(`${path.basename(file)} ${r.bound} of ${r.bound + r.left}`);
    // The last library's names would bind nothing (0.9 s to read libtensorflow_cc's 435,000).
    if (k < searched.length - 1) for (const name of definedNames(file)) earlier.add(name);
  }
  return done;
}

// Unpacks spec's wheel into tmp with extract(wheel, tmp, log), from the cache or downloaded
// there; a cached wheel that turns out unreadable is deleted and downloaded again.
async function fromWheel(tmp, spec, {env, log, index}, extract = extractWheel) {
  const cache = cacheDir(env);
  let wheel = findCachedWheel(cache, spec);
  let downloaded = false;
  if (!wheel) {
    wheel = await downloadWheel(cache, spec, {env, log, index});
    downloaded = true;
  }
  for (;;) {
    try {
      return await extract(wheel, tmp, log, spec);
    } catch (err) {
      if (err.code !== ZIP_CORRUPT) throw err;
      fs.rmSync(wheel, {force: true});
      fs.rmSync(tmp, {recursive: true, force: true});
      fs.mkdirSync(tmp, {recursive: true});
      if (downloaded) {
        throw setupError(
          `the downloaded wheel ${wheel} is unreadable (${err.message}); it was deleted. ` +
            'Try again; if this repeats, check your PyPI mirror or proxy.',
        );
      }
      log(`the cached wheel ${wheel} is unreadable (${err.message}); deleted it, downloading again`);
      wheel = await downloadWheel(cache, spec, {env, log, index});
      downloaded = true;
    }
  }
}

// ---------------------------------------------------------------------------

// Writes what makes tmp/ a complete tree for `dest` (its final path): the link that
// `-ltensorflow` finds (libtensorflow.so, or .dylib), the pkg-config file, the marker (last).
// `libraries`: the LIBRARIES entry of the tree's OS.
function finish(tmp, dest, info, {libs, linkName} = HOST_LIBRARIES) {
  const lib = path.join(tmp, 'lib');
  fs.mkdirSync(path.join(lib, 'pkgconfig'), {recursive: true});
  fs.mkdirSync(path.join(tmp, 'include'), {recursive: true});
  if (linkName && !exists(path.join(lib, linkName))) fs.symlinkSync(libs[0], path.join(lib, linkName));
  fs.writeFileSync(path.join(lib, 'pkgconfig', 'tensorflow.pc'), pcText(dest));
  const marker = {
    version: TF_VERSION,
    source: info.source,
    kind: info.kind,
    deps: dest,
    libs: libSizes(lib, libs),
    headers: info.headers,
    unpackRules: UNPACK_RULES,
    created: new Date().toISOString(),
  };
  fs.writeFileSync(path.join(tmp, '.complete'), JSON.stringify(marker, null, 2) + '\n');
}

function exists(p) {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isLink(p) {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

// Replaces dest with tmp: two renames, so dest is either the old tree, absent
// for an instant, or the new complete tree. Either may be a symlink.
function swapIn(tmp, dest) {
  let old = null;
  if (exists(dest)) {
    old = `${dest}.old-${process.pid}`;
    fs.rmSync(old, {recursive: true, force: true});
    fs.renameSync(dest, old);
  }
  try {
    fs.renameSync(tmp, dest);
  } catch (err) {
    if (old) fs.renameSync(old, dest);
    throw err;
  }
  if (old) fs.rmSync(old, {recursive: true, force: true});
}

// Size of what an incomplete deps/ holds (reclaimable when it is replaced).
function depsBytes(deps, libs = LIBS) {
  if (isLink(deps)) return 0;
  let total = 0;
  for (const lib of libs) {
    try {
      const st = fs.lstatSync(path.join(deps, 'lib', lib));
      if (st.isFile()) total += st.size;
    } catch {
      // absent
    }
  }
  return total;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const LOCK_POLL_MS = 500;
const LOCK_HEARTBEAT_MS = 5000;
const LOCK_STALE_MS = 60 * 1000; // no heartbeat for this long: its holder is gone

// Runs fn holding the lock directory `lock` (made with mkdir, which is atomic). A
// holder refreshes its mtime; a lock whose holder died (same host) or that has no
// heartbeat is taken over. Two processes that both take over a stale lock only
// repeat work: every result is renamed into place whole, after a completeness check.
async function withLock(lock, log, fn) {
  let told = false;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    let owner = null;
    let age = 0;
    try {
      age = Date.now() - fs.statSync(lock).mtimeMs;
      owner = JSON.parse(fs.readFileSync(path.join(lock, 'owner.json'), 'utf8'));
    } catch {
      // being created or removed right now
    }
    const dead = owner && owner.host === os.hostname() && !pidAlive(owner.pid);
    if (dead || age > LOCK_STALE_MS) {
      fs.rmSync(lock, {recursive: true, force: true});
      continue;
    }
    if (!told && owner) {
      log(`waiting for another install (pid ${owner.pid}) that is providing libtensorflow ...`);
      told = true;
    }
    await sleep(LOCK_POLL_MS);
  }
  fs.writeFileSync(path.join(lock, 'owner.json'), JSON.stringify({pid: process.pid, host: os.hostname()}));
  const heartbeat = setInterval(() => {
    try {
      const now = new Date();
      fs.utimesSync(lock, now, now);
    } catch {
      // removed under us: the completeness checks still hold
    }
  }, LOCK_HEARTBEAT_MS);
  heartbeat.unref();
  try {
    return await fn();
  } finally {
    clearInterval(heartbeat);
    fs.rmSync(lock, {recursive: true, force: true});
  }
}

/** The machine's shared unpacked copy for this version and platform (default: this machine's). */
function sharedDir(env = process.env, key = hostPlatform()) {
  return path.join(cacheDir(env), `libtensorflow-${TF_VERSION}-${key}`);
}

/**
 * Makes the shared copy of platform `key` complete (downloading and unpacking under the
 * lock) and returns its path. Another platform's copy is for cross-building the addon.
 */
async function provideShared({key = hostPlatform(), env = process.env, log = defaultLog, index} = {}) {
  const spec = wheelSpec(key);
  const shared = sharedDir(env, key);
  if (isComplete(shared, null, spec.libraries)) return shared;
  const cache = path.dirname(shared);
  try {
    fs.mkdirSync(cache, {recursive: true});
  } catch (err) {
    throw setupError(
      `cannot create ${cache} (${err.code}), where libtensorflow is unpacked once per machine: make it ` +
        `writable, or set XDG_CACHE_HOME to a writable folder, or ${ENV_DIR} to a directory holding ` +
        `${LIBS.join(' and ')}.`,
      err,
    );
  }
  return withLock(`${shared}.lock`, log, async () => {
    if (isComplete(shared, null, spec.libraries)) return shared;
    removeStale(cache, path.basename(shared));
    const reclaim = depsBytes(shared, spec.libraries.libs);
    if (freeBytes(cache) + reclaim < unpackBytes(key)) throw noSpaceError(cache, unpackBytes(key));
    if (freeBytes(cache) < unpackBytes(key)) {
      log(`low on disk space: removing the incomplete ${shared} first`);
      fs.rmSync(shared, {recursive: true, force: true});
    }
    const tmp = `${shared}.tmp-${process.pid}`;
    try {
      fs.rmSync(tmp, {recursive: true, force: true});
      fs.mkdirSync(tmp, {recursive: true});
      finish(tmp, shared, await fromWheel(tmp, spec, {env, log, index}), spec.libraries);
      swapIn(tmp, shared);
    } finally {
      fs.rmSync(tmp, {recursive: true, force: true});
    }
    log(`libtensorflow ${TF_VERSION} is unpacked in ${shared} (shared by every project of this user)`);
    return shared;
  });
}

// ---------------------------------------------------------------------------
// The GPU package's CUDA libraries (CUDA_WHEELS): one shared copy per user and machine,
// cuda-libs-<TF_VERSION>-linux-x64/nvidia/<dir>/lib/, unpacked from the nvidia-*-cu12 wheels
// (kept in the cache beside the tensorflow wheel); <root>/cuda links to it (or is a copy of
// it with TFJS_NODE_RS_COPY_LIBTENSORFLOW=1). Fetched only where an NVIDIA driver is present
// (or TFJS_NODE_RS_CUDA=1): without one, TF runs on the CPU and the libraries would be 2.2 GB
// of disk for nothing.

const CUDA_WHEEL_MB = CUDA_WHEELS.reduce((sum, w) => sum + w.MB, 0);
const CUDA_LIBS_MB = 2156; // the libraries unpacked (NVIDIA ships them stripped)

/** The wheel of CUDA_WHEELS entry `w`, in wheelSpec's shape. */
function cudaWheelSpec(w) {
  const stem = w.project.replace(/-/g, '_');
  const version = w.version.replace(/\./g, '\\.');
  return {
    project: w.project,
    version: w.version,
    wheelMB: w.MB,
    re: new RegExp(`^${stem}-${version}-py3-none-[^-]*x86_64[^-]*\\.whl$`),
    pipTarget: pipTarget('manylinux2014_x86_64'),
    describe: `${w.project} ${w.version} wheel for x86_64`,
  };
}

function sharedCudaDir(env = process.env) {
  return path.join(cacheDir(env), `cuda-libs-${TF_VERSION}-linux-x64`);
}

// What a complete CUDA tree's marker lists: the wheels it was unpacked from.
const CUDA_WHEEL_IDS = CUDA_WHEELS.map((w) => `${w.project}==${w.version}`);

function isCudaComplete(dir) {
  const marker = readMarker(dir);
  if (!marker || JSON.stringify(marker.wheels) !== JSON.stringify(CUDA_WHEEL_IDS)) return false;
  return cudaLibraryPaths(dir).every((lib) => {
    try {
      return fs.statSync(lib).size === marker.libs[path.relative(dir, lib)];
    } catch {
      return false;
    }
  });
}

// Unpacks wheel `w`'s libraries into tmp/lib/.
async function extractCudaWheel(w, wheel, tmp, log) {
  const prefix = `nvidia/${w.dir}/lib/`;
  const written = await extractZip(wheel, tmp, (name) => (name.startsWith(prefix) && w.libs.includes(name.slice(prefix.length)) ? `lib/${name.slice(prefix.length)}` : null));
  if (written.length !== w.libs.length) throw zipError(`${path.basename(wheel)} does not contain ${w.libs.join(', ')}`);
  log(`extracted ${w.libs.join(', ')} from ${path.basename(wheel)}`);
  return written;
}

/** Makes the shared copy of the CUDA libraries complete (downloading and unpacking under the lock); returns its path. */
async function provideSharedCuda({env = process.env, log = defaultLog, index} = {}) {
  const shared = sharedCudaDir(env);
  if (isCudaComplete(shared)) return shared;
  const cache = path.dirname(shared);
  fs.mkdirSync(cache, {recursive: true});
  return withLock(`${shared}.lock`, log, async () => {
    if (isCudaComplete(shared)) return shared;
    removeStale(cache, path.basename(shared));
    const missing = CUDA_WHEELS.filter((w) => !findCachedWheel(cache, cudaWheelSpec(w)));
    const needed = (CUDA_LIBS_MB + missing.reduce((sum, w) => sum + w.MB, 0)) * MB;
    if (freeBytes(cache) + depsBytes(shared) < needed) throw noSpaceError(cache, needed);
    log(`providing the CUDA libraries (${CUDA_WHEELS.length} nvidia-*-cu12 wheels, ${CUDA_WHEEL_MB} MB` +
      `${missing.length ? `, ${missing.length} to download` : ', all cached'}; ${CUDA_LIBS_MB} MB unpacked) ...`);
    const tmp = `${shared}.tmp-${process.pid}`;
    try {
      fs.rmSync(tmp, {recursive: true, force: true});
      const libs = {};
      for (const w of CUDA_WHEELS) {
        const part = path.join(tmp, 'nvidia', `${w.dir}.part`);
        fs.mkdirSync(part, {recursive: true});
        await fromWheel(part, cudaWheelSpec(w), {env, log, index}, (wheel, dest, log_) => extractCudaWheel(w, wheel, dest, log_));
        fs.renameSync(part, path.join(tmp, 'nvidia', w.dir));
      }
      for (const lib of cudaLibraryPaths(tmp)) libs[path.relative(tmp, lib)] = fs.statSync(lib).size;
      const marker = {version: TF_VERSION, wheels: CUDA_WHEEL_IDS, libs, created: new Date().toISOString()};
      fs.writeFileSync(path.join(tmp, '.complete'), JSON.stringify(marker, null, 2) + '\n');
      swapIn(tmp, shared);
    } finally {
      fs.rmSync(tmp, {recursive: true, force: true});
    }
    log(`the CUDA libraries are unpacked in ${shared} (shared by every project of this user)`);
    return shared;
  });
}

/**
 * The GPU package's <root>/cuda: a link to (or copy of) the shared CUDA libraries where an
 * NVIDIA driver is present or TFJS_NODE_RS_CUDA=1; removed where there is none or with
 * TFJS_NODE_RS_CUDA=0 (TF then runs everything on the CPU). Returns its path, or null.
 */
async function ensureCuda({root, env = process.env, log = defaultLog, index, copy = false, driver = nvidiaDriver()}) {
  const link = packageCudaDir(root);
  const mode = cudaSwitch(env, setupError);
  if (mode === 'off' || (mode === 'auto' && !driver)) {
    fs.rmSync(link, {recursive: true, force: true});
    log(mode === 'off'
      ? `${CUDA_ENV}=0: the CUDA libraries are not provided; TensorFlow runs on the CPU`
      : `no NVIDIA driver found (no /proc/driver/nvidia, no libcuda.so.1): the CUDA libraries (${CUDA_WHEEL_MB} MB ` +
        `to download) are not fetched, and TensorFlow runs on the CPU. Once a driver is installed, the next ` +
        `require of the package fetches them (or set ${CUDA_ENV}=1 to fetch them anyway).`);
    return null;
  }
  if (driver) log(`NVIDIA driver${driver.version ? ` ${driver.version}` : ''} found (${driver.where})`);
  if (driver && driver.version && versionBelow(driver.version, MIN_DRIVER.split('.').map(Number))) {
    log(`warning: NVIDIA driver ${driver.version} is older than ${MIN_DRIVER}, the oldest the CUDA 12 libraries run on: ` +
      'TensorFlow will not find the GPU and runs on the CPU until the driver is updated.');
  }
  const shared = await provideSharedCuda({env, log, index});
  const linked = isLink(link) && path.resolve(root, fs.readlinkSync(link)) === shared;
  if (copy ? !isLink(link) && isCudaComplete(link) : linked) return link;
  const tmp = `${link}.tmp-${process.pid}`;
  try {
    fs.rmSync(tmp, {recursive: true, force: true});
    if (copy) {
      if (freeBytes(root) < CUDA_LIBS_MB * MB) throw noSpaceError(root, CUDA_LIBS_MB * MB);
      fs.cpSync(shared, tmp, {recursive: true});
      log(`${COPY_ENV}=1: copied the CUDA libraries into ${link}`);
    } else {
      fs.symlinkSync(shared, tmp);
    }
    swapIn(tmp, link);
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  return link;
}

// A copy of the shared tree in tmp, for deps/ (copy-on-write where the file system can).
function copyShared(shared, tmp) {
  fs.mkdirSync(path.join(tmp, 'lib'), {recursive: true});
  for (const lib of LIBS) {
    fs.copyFileSync(path.join(shared, 'lib', lib), path.join(tmp, 'lib', lib), fs.constants.COPYFILE_FICLONE);
  }
  fs.cpSync(path.join(shared, 'include'), path.join(tmp, 'include'), {recursive: true});
  const marker = readMarker(shared);
  return {source: shared, kind: marker.kind, headers: marker.headers};
}

// Whether deps/ as it is serves this run: made from $TFJS_NODE_RS_LIBTENSORFLOW
// when it is set; otherwise a link to the shared copy, or a copy of it with
// $TFJS_NODE_RS_COPY_LIBTENSORFLOW=1 (a deps/ made from a directory once stays).
function servesAsIs(deps, {envDir, copy, shared}) {
  if (!isComplete(deps, envDir)) return false;
  if (envDir) return !isLink(deps);
  const marker = readMarker(deps);
  if (marker.kind === 'directory') return !isLink(deps);
  if (isLink(deps) === copy) return false;
  // A link to, or copy of, this variant's shared copy (not the other x64 build's).
  return path.resolve(copy ? marker.source : path.resolve(path.dirname(deps), fs.readlinkSync(deps))) === shared;
}

/** 'gpu' for the GPU package (tfjs-node-rs-gpu, also when installed under an alias), else 'cpu'. */
function packageVariant(root) {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).name === GPU_PACKAGE ? 'gpu' : 'cpu';
  } catch {
    return 'cpu';
  }
}

// The PLATFORMS key of `variant` on platform `base` ('linux-x64', ...).
function variantKey(base, variant) {
  if (variant !== 'gpu') return base;
  const key = `${base}-gpu`;
  if (!Object.hasOwn(PLATFORMS, key)) {
    throw setupError(
      `unsupported platform: ${GPU_PACKAGE} (TensorFlow with NVIDIA CUDA) exists only for Linux x64; on ${base} ` +
        'install tfjs-node-rs instead.',
    );
  }
  return key;
}

/**
 * Makes <root>/deps hold libtensorflow 2.21.0 (libs, headers, pkg-config file).
 * Returns { deps, lib, fresh } where fresh tells whether anything was done.
 * Throws an Error with code 'TFJS_NODE_RS_SETUP' and a message for the user.
 * index: options for the index client (tests make its retries quick).
 */
async function ensureLibtensorflow({root = DEFAULT_ROOT, log = defaultLog, env = process.env, platform, index, variant} = {}) {
  root = path.resolve(root);
  variant = variant || packageVariant(root);
  const deps = path.join(root, 'deps');
  const envDir = env[ENV_DIR] ? path.resolve(env[ENV_DIR]) : null;
  const copy = env[COPY_ENV] === '1';
  const base = platform ? `${platform.platform}-${platform.arch}` : hostPlatform();
  const cuda = () => (variant === 'gpu' ? ensureCuda({root, env, log, index, copy}) : null);
  if (Object.hasOwn(PLATFORMS, base) && servesAsIs(deps, {envDir, copy, shared: sharedDir(env, variantKey(base, variant))})) {
    const marker = readMarker(deps);
    if (!isLink(deps) && marker.deps !== deps) relocate(deps, marker);
    return {deps, lib: path.join(deps, 'lib'), fresh: false, cuda: await cuda()};
  }

  const key = variantKey(checkPlatform(platform || detectPlatform()), variant);
  removeStale(root, 'deps');
  const tmp = path.join(root, `deps.tmp-${process.pid}`);
  try {
    fs.rmSync(tmp, {recursive: true, force: true});
    fs.mkdirSync(root, {recursive: true});
    if (envDir) {
      fs.mkdirSync(tmp, {recursive: true});
      finish(tmp, deps, fromDirectory(envDir, tmp, log));
    } else {
      const shared = await provideShared({key, env, log, index});
      if (copy) {
        if (freeBytes(root) + depsBytes(deps) < copyBytes(key)) throw noSpaceError(root, copyBytes(key));
        fs.mkdirSync(tmp, {recursive: true});
        finish(tmp, deps, copyShared(shared, tmp));
        log(`${COPY_ENV}=1: copied libtensorflow into ${deps}`);
      } else {
        fs.symlinkSync(shared, tmp, FOLDER_LINK);
      }
    }
    swapIn(tmp, deps);
    log(`libtensorflow ${TF_VERSION} is ready in ${deps}${isLink(deps) ? ` (a link to ${fs.readlinkSync(deps)})` : ''}`);
    return {deps, lib: path.join(deps, 'lib'), fresh: true, cuda: await cuda()};
  } catch (err) {
    fs.rmSync(tmp, {recursive: true, force: true});
    if (err.code === SETUP) throw err;
    if (err.code === 'ENOSPC') throw noSpaceError(path.dirname(err.path || deps), unpackBytes(key), err);
    if (isWriteError(err)) throw writeError(err, root);
    if (err.code === ZIP_CORRUPT) {
      throw setupError(`cannot read the tensorflow wheel: ${err.message}`, err);
    }
    throw err;
  }
}

/**
 * Makes addonDir/deps lead to root's deps/ (the addon's first RUNPATH entry is $ORIGIN/deps/lib):
 * a link to where root's deps/ resolves, so that the per-platform package finds libtensorflow in
 * any package manager's layout (js/first_use.js).
 */
function linkAddonDir(root, addonDir) {
  const target = fs.realpathSync(path.join(root, 'deps'));
  const link = path.join(addonDir, 'deps');
  let current = null;
  try {
    current = fs.realpathSync(link);
  } catch {
    // absent, or a dangling link
  }
  if (current === target) return;
  removeStale(addonDir, 'deps');
  const tmp = `${link}.tmp-${process.pid}`;
  fs.rmSync(tmp, {recursive: true, force: true});
  fs.symlinkSync(target, tmp, FOLDER_LINK);
  swapIn(tmp, link);
}


function isWriteError(err) {
  return ['EACCES', 'EPERM', 'EROFS'].includes(err.code);
}

/** The setup error for a file system refusing to let the package at `root` write. */
function writeError(err, root) {
  return setupError(`cannot write ${err.path || root} (${err.code}): make it writable, or run ` +
    `\`node ${path.join(root, 'scripts', 'libtensorflow.js')}\` once as a user who can.`, err);
}

/**
 * Provides libtensorflow for the package at `root`, and the link in the folder of the addon it
 * loads (`addonDir`, else the one found from root as the loader finds it); one process at a time
 * per package (processes started at once wait for the first).
 */
async function provideForPackage({root = DEFAULT_ROOT, addonDir = null, log = defaultLog} = {}) {
  try {
    return await withLock(path.join(root, 'deps.lock'), log, async () => {
      const res = await ensureLibtensorflow({root, log});
      // Windows has no rpath to serve: the loader puts <root>/deps/lib on PATH instead.
      if (process.platform === 'win32') return res;
      const addon = addonCandidates({root})[0];
      const dir = addonDir || (addon && path.dirname(fs.realpathSync(addon)));
      if (dir && path.resolve(dir) !== path.resolve(root)) linkAddonDir(root, dir);
      return res;
    });
  } catch (err) {
    throw isWriteError(err) ? writeError(err, root) : err;
  }
}

// `node scripts/libtensorflow.js [--addon-dir DIR] [--json]`: what the first require does, ahead of
// time (a Docker image build). --addon-dir: the folder of the addon to link (js/first_use.js
// passes the one Node resolved); --json: the outcome as one line of JSON on stdout ({ok, deps} or
// {ok: false, message}).
async function main(argv = process.argv.slice(2)) {
  const json = argv.includes('--json');
  const at = argv.indexOf('--addon-dir');
  const addonDir = at >= 0 ? argv[at + 1] : null;
  const report = (outcome) => {
    if (json) process.stdout.write(`${JSON.stringify(outcome)}\n`);
  };
  try {
    const {deps} = await provideForPackage({addonDir});
    report({ok: true, deps});
  } catch (err) {
    const message = err.code === SETUP ? err.message : `setting up libtensorflow failed unexpectedly: ${err.stack || err}`;
    process.stderr.write(`tfjs-node-rs: ${message}\n`);
    report({ok: false, message});
    process.exitCode = 1;
  }
}

module.exports = {
  ensureLibtensorflow,
  libtensorflowDir,
  cacheDir,
  sharedDir,
  provideShared,
  platformOfTarget,
  hostPlatform,
  hostTarget,
  provideSharedCuda,
  sharedCudaDir,
  TF_VERSION,
  COPY_ENV,
  SETUP_ERROR_CODE: SETUP,
  setupError,
  log: defaultLog,
  exists,
  // For tests.
  _internal: {
    listZip, extractZip, findCachedWheel, pickWheel, wheelSpec, cudaWheelSpec, wheelTarget, wantedHeader, checkPlatform,
    isComplete, isCudaComplete, ensureCuda, packageVariant, withLock, ZIP_CORRUPT,
  },
};

if (require.main === module) main();
