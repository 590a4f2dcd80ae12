#!/usr/bin/env node
'use strict';
// Packs the npm packages the napi-rs way:
//   tfjs-node-rs-<version>.tgz                  the root package (JS, binding.js loader, the
//                                               script the first require runs to provide
//                                               libtensorflow); its package.json has no scripts,
//                                               so no package manager has an install script to
//                                               block (the checkout's `prepare` is for developers)
//   tfjs-node-rs-linux-x64-gnu-<version>.tgz    the per-platform packages (npm/linux-x64-gnu/,
//   tfjs-node-rs-linux-arm64-gnu-<version>.tgz  npm/linux-arm64-gnu/, npm/darwin-arm64/), each
//   tfjs-node-rs-darwin-arm64-<version>.tgz     holding its prebuilt tfjs-node-rs.<platform>.node
//   tfjs-node-rs-win32-x64-msvc-<version>.tgz   (npm/win32-x64-msvc/ also the python311.dll stub
//                                               that scripts/build.js builds there)
//   tfjs-node-rs-gpu-<version>.tgz              the NVIDIA GPU package: the root package's files
//                                               under npm/gpu/package.json's name, description,
//                                               os and cpu, with npm/gpu/README.md (its first
//                                               require provides the CUDA build; same addon)
//
// Before packing it copies the built addon into npm/<platform>/, checks the addon in its own
// format: an ELF one (DT_NEEDED libtensorflow_cc.so.2, a RUNPATH that finds
// node_modules/tfjs-node-rs/deps/lib, and node_modules/@tensorflow/tfjs-node/deps/lib for the
// alias install), a Mach-O one by scripts/macho.js's checkMacAddon (the same rpaths as
// @loader_path ones, its libraries and every symbol it imports), a PE one (x86-64, imports
// _pywrap_tensorflow_common.dll and nothing from node.exe: N-API is looked up at load),
// that the versions of the packages and of the root's optionalDependencies agree,
// and after packing, what each tarball holds (no Rust sources, no libtensorflow,
// no addon in the root package).
//
//   node scripts/pack.js [--out DIR] [--build] [--target TRIPLE]...
//     --out DIR        where the tarballs go (default: the repository root; *.tgz is git-ignored)
//     --build          build each addon first (scripts/build.js, cross-building the other
//                      platform's) when it is missing or older than the Rust sources
//     --target TRIPLE  pack only this napi target's platform package (and the root package);
//                      default: every target in package.json's napi.targets

const fs = require('fs');
const path = require('path');
const {spawnSync} = require('child_process');

const ROOT = path.resolve(__dirname, '..');

// napi target triple -> the platform suffix napi-rs uses in file and package names.
const {ADDON_PLATFORMS, preloadFile} = require('../js/libtensorflow_facts');
const PLATFORMS = Object.fromEntries(Object.values(ADDON_PLATFORMS).map((p) => [p.rustTarget, p.napi]));

// Where an installed addon must look for libtensorflow, relative to its own folder (the rpath
// origin: $ORIGIN on Linux, @loader_path on macOS): the link the first require makes beside it
// (js/first_use.js), then the root package as itself, and installed as `@tensorflow/tfjs-node`
// (npm's alias). The GPU package, as itself and as `@tensorflow/tfjs-node-gpu`, uses the same
// addon. (build.rs writes them, with others.)
const ADDON_RPATH_DIRS = [
  'deps/lib', '../tfjs-node-rs/deps/lib', '../@tensorflow/tfjs-node/deps/lib',
  '../tfjs-node-rs-gpu/deps/lib', '../@tensorflow/tfjs-node-gpu/deps/lib',
];

// What the root tarball must hold, and must not.
const ROOT_REQUIRED = [
  'package.json', 'index.js', 'index.d.ts', 'binding.js', 'binding.d.ts',
  'js/native_loader.js', 'js/native_loader_core.js', 'js/first_use.js', 'js/libtensorflow_facts.js', 'js/cuda.js',
  'scripts/libtensorflow.js', 'scripts/pypi.js', 'scripts/strip_symbols.js', 'scripts/prebind.js',
];
const ROOT_FORBIDDEN = [
  /^src\//, /^Cargo\.(toml|lock)$/, /^build\.rs$/, /^deps\//, /^target\//, /\.node$/, /^__test__\//,
  /^npm\//, /^\.cargo\//, /^\.ci\//, /\.tgz$/,
];

function log(message) {
  process.stderr.write(`tfjs-node-rs pack: ${message}\n`);
}

function fail(message) {
  const err = new Error(message);
  err.code = 'TFJS_NODE_RS_PACK';
  return err;
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

// The npm CLI: the one running us (npm run) if any, else npm on PATH.
function npmCommand(env = process.env) {
  const execpath = env.npm_execpath;
  if (execpath && /npm-cli\.js$/.test(execpath) && fs.existsSync(execpath)) {
    return {cmd: process.execPath, pre: [execpath]};
  }
  return {cmd: 'npm', pre: []};
}

function runNpm(args, {cwd, env = process.env}) {
  const npm = npmCommand(env);
  const res = spawnSync(npm.cmd, [...npm.pre, ...args], {cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024});
  if (res.error) throw res.error;
  return res;
}

/** The packages to pack: root info and one entry per napi target (or per one of `only`). */
function describe(root = ROOT, only = null) {
  const pkg = readJson(path.join(root, 'package.json'));
  const napi = pkg.napi || {};
  const binaryName = napi.binaryName || pkg.name;
  const targets = napi.targets || [];
  if (!targets.length) throw fail('package.json has no napi.targets');
  const unknown = (only || []).filter((t) => !targets.includes(t));
  if (unknown.length) throw fail(`${unknown.join(', ')} is not in package.json's napi.targets (${targets.join(', ')})`);
  const platforms = targets.filter((t) => !only || only.includes(t)).map((target) => {
    const suffix = PLATFORMS[target];
    if (!suffix) throw fail(`napi target ${target} is not known to scripts/pack.js`);
    const dir = path.join(root, 'npm', suffix);
    return {
      target,
      suffix,
      dir,
      name: `${pkg.name}-${suffix}`,
      addon: `${binaryName}.${suffix}.node`,
      // Beside the addon, where the loader looks for it (js/native_loader_core.js).
      preload: /-windows-/.test(target) ? null : preloadFile(suffix),
    };
  });
  return {root, pkg, binaryName, platforms};
}

function checkVersions({pkg, platforms}) {
  const optional = pkg.optionalDependencies || {};
  for (const p of platforms) {
    const file = path.join(p.dir, 'package.json');
    if (!fs.existsSync(file)) throw fail(`${file} is missing (napi create-npm-dirs makes it)`);
    const sub = readJson(file);
    if (sub.name !== p.name) throw fail(`${file}: name is ${sub.name}, expected ${p.name}`);
    if (sub.version !== pkg.version) {
      throw fail(`${file}: version ${sub.version} differs from the root package's ${pkg.version} (run \`napi version\`)`);
    }
    if (sub.main !== p.addon || !(sub.files || []).includes(p.addon)) {
      throw fail(`${file}: main and files must name ${p.addon}`);
    }
    if (p.preload && !sub.files.includes(p.preload)) throw fail(`${file}: files must name ${p.preload}`);
    if (optional[p.name] !== pkg.version) {
      throw fail(`package.json: optionalDependencies["${p.name}"] must be "${pkg.version}" (is ${JSON.stringify(optional[p.name])})`);
    }
  }
}

// ELF e_machine of each target's CPU (the first part of its triple).
const ELF_MACHINES = {x86_64: 62, aarch64: 183};

// The addon must be built for `target`, link libtensorflow and find it in the installed
// layout: checked in the target's binary format.
function checkAddon(file, target) {
  if (/-windows-/.test(target)) return checkPeAddon(file, target);
  return /-apple-darwin$/.test(target) ? checkMachOAddon(file, target) : checkElfAddon(file, target);
}

// A Windows addon: built for x86-64, importing TF's DLL, and nothing from node.exe (or a
// libnode), so that it loads into any Node.js build (napi's dyn-symbols).
function checkPeAddon(file, target) {
  const {readPe, MACHINE_AMD64} = require('./pe');
  const {LIBRARIES} = require('../js/libtensorflow_facts');
  let pe;
  try {
    pe = readPe(file);
  } catch (err) {
    throw fail(err.message);
  }
  const dlls = Object.keys(pe.imports).map((d) => d.toLowerCase());
  if (pe.machine !== MACHINE_AMD64) throw fail(`${file} is not built for ${target} (PE machine 0x${pe.machine.toString(16)})`);
  const tf = LIBRARIES.win32.libs[0];
  if (!dlls.includes(tf.toLowerCase())) throw fail(`${file} does not import ${tf} (imports: ${dlls.join(', ')})`);
  const host = dlls.filter((d) => /^(node\.exe|libnode\.dll)$/.test(d));
  if (host.length) throw fail(`${file} imports from ${host.join(', ')}: it would load into that Node.js build only`);
  return pe;
}

// A macOS addon: scripts/macho.js's check, against the darwin-arm64 libtensorflow (unpacked by
// the cross build), a macOS node from the npm registry and zig's libSystem stubs.
function checkMachOAddon(file, target) {
  const {checkMacAddon, checkInputs} = require('./macho');
  const inputs = checkInputs({root: ROOT, fetch: true});
  if (!inputs.libDir) throw fail(`${file}: the darwin-arm64 libtensorflow is missing (\`node scripts/build.js --target ${target}\` unpacks it)`);
  let res;
  try {
    res = checkMacAddon({...inputs, addon: file});
  } catch (err) {
    if (err.code === 'TFJS_NODE_RS_MACHO') throw fail(err.message);
    throw err;
  }
  log(res.summary.split('\n').slice(0, 5).join('; '));
  return res.addon;
}

// An ELF file's dynamic section (readElfDynamic), after checking it is built for `target`.
function elfFor(file, target) {
  const {readElfDynamic} = require('../js/native_loader_core');
  const elf = readElfDynamic(file);
  const cpu = target.split('-')[0];
  if (elf.machine !== ELF_MACHINES[cpu]) {
    throw fail(`${file} is not built for ${target} (ELF machine ${elf.machine}, expected ${ELF_MACHINES[cpu]} for ${cpu})`);
  }
  return elf;
}

function checkElfAddon(file, target) {
  const elf = elfFor(file, target);
  if (!elf.needed.includes('libtensorflow_cc.so.2')) {
    throw fail(`${file} does not link libtensorflow_cc.so.2 (DT_NEEDED: ${elf.needed.join(', ')})`);
  }
  const runpath = elf.runpath.length ? elf.runpath : elf.rpath;
  for (const dir of ADDON_RPATH_DIRS.map((d) => `$ORIGIN/${d}`)) {
    if (!runpath.includes(dir)) {
      throw fail(`${file}: RUNPATH (${runpath.join(':') || 'none'}) lacks ${dir} (see build.rs)`);
    }
  }
  return elf;
}

// The preload addon must be built for `target` and load without libtensorflow: its whole point
// is to start before it (js/native_loader_core.js's backgroundLoader).
function checkPreload(file, target) {
  let needed;
  if (/-apple-darwin$/.test(target)) {
    const {readMachO} = require('./macho');
    let macho;
    try {
      // Apple silicon runs no unsigned code: the linker's ad-hoc signature must hold.
      macho = readMachO(file, {verifySignature: true});
    } catch (err) {
      throw fail(err.message);
    }
    if (!macho.signature) throw fail(`${file} is not signed`);
    needed = macho.dylibs.map((d) => d.name);
  } else {
    needed = elfFor(file, target).needed;
  }
  const tf = needed.filter((n) => /tensorflow/.test(n));
  if (tf.length) throw fail(`${file} links ${tf.join(', ')}: it must load before libtensorflow`);
}

async function ensureAddon(info, {build}) {
  const {root, platforms} = info;
  const buildMod = require('./build');
  for (const p of platforms) {
    const file = path.join(root, p.addon);
    let why = null;
    if (!fs.existsSync(file)) why = `${p.addon} is missing`;
    else if (p.preload && !fs.existsSync(path.join(root, p.preload))) why = `${p.preload} is missing`;
    else if (!fs.existsSync(path.join(root, 'binding.js'))) why = 'binding.js is missing';
    else if (buildMod.isDevCheckout(root) && buildMod.newestSourceMtime(root) > fs.statSync(file).mtimeMs) {
      why = `${p.addon} is older than the Rust sources`;
    }
    if (!why) continue;
    if (!build) throw fail(`${why}: run \`npm run build\` first (or pass --build)`);
    log(`building the addon: ${why}`);
    const code = await buildMod.build({root, log, target: p.target});
    if (code !== 0) throw fail(`the build failed (exit code ${code})`);
    if (!fs.existsSync(file)) throw fail(`the build did not produce ${p.addon}`);
  }
}

function npmPack(dir, out) {
  const res = runNpm(['pack', '--json', '--ignore-scripts', '--pack-destination', out], {cwd: dir});
  if (res.status !== 0) throw fail(`npm pack in ${dir} failed:\n${res.stderr || res.stdout}`);
  let parsed;
  try {
    parsed = JSON.parse(res.stdout.slice(res.stdout.indexOf('[')));
  } catch (err) {
    throw fail(`npm pack in ${dir} printed no JSON:\n${res.stdout}\n${res.stderr}`);
  }
  const r = parsed[0];
  return {
    file: path.join(out, r.filename),
    size: r.size,
    unpackedSize: r.unpackedSize,
    files: r.files.map((f) => f.path),
  };
}

function checkRootContents(files) {
  const missing = ROOT_REQUIRED.filter((f) => !files.includes(f));
  if (missing.length) throw fail(`the root tarball lacks ${missing.join(', ')} (package.json "files")`);
  const bad = files.filter((f) => ROOT_FORBIDDEN.some((re) => re.test(f)));
  if (bad.length) throw fail(`the root tarball must not hold ${bad.join(', ')} (package.json "files")`);
}

/**
 * Packs the root package, or with `variant` (npm/gpu/) the GPU package, into `out`: a staging
 * folder with the root package's files, README.md (npm/gpu/README.md for the GPU package), and
 * the root's package.json without its scripts (development commands only: a published package
 * with an install script is one package managers now block), with the variant's fields in place.
 */
function packStaged(root, out, variant = null) {
  const pkg = readJson(path.join(root, 'package.json'));
  delete pkg.scripts;
  const variantDir = variant && path.join(root, 'npm', variant);
  const own = variantDir ? readJson(path.join(variantDir, 'package.json')) : {};
  const {GPU_PACKAGE} = require('../js/libtensorflow_facts');
  if (variant && own.name !== GPU_PACKAGE) throw fail(`npm/${variant}/package.json: name is ${own.name}, expected ${GPU_PACKAGE}`);
  const stage = path.join(out, `.stage-${variant || 'root'}-${process.pid}`);
  fs.rmSync(stage, {recursive: true, force: true});
  try {
    fs.mkdirSync(stage, {recursive: true});
    for (const entry of pkg.files) fs.cpSync(path.join(root, entry), path.join(stage, entry), {recursive: true});
    fs.copyFileSync(path.join(variantDir || root, 'README.md'), path.join(stage, 'README.md'));
    fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify({...pkg, ...own}, null, 2)}\n`);
    const packed = npmPack(stage, out);
    checkRootContents(packed.files);
    return packed;
  } finally {
    fs.rmSync(stage, {recursive: true, force: true});
  }
}

function fmtMB(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Packs the root, GPU and per-platform packages into `out`.
 * Returns { root: { file, size, files }, gpu: { file, size, files }, platforms: [{ name, file, size, files }], seconds }.
 */
async function pack({root = ROOT, out = ROOT, build = false, targets = null} = {}) {
  const started = Date.now();
  root = path.resolve(root);
  out = path.resolve(out);
  fs.mkdirSync(out, {recursive: true});
  const info = describe(root, targets);
  checkVersions(describe(root));
  await ensureAddon(info, {build});
  const platforms = [];
  for (const p of info.platforms) {
    const src = path.join(root, p.addon);
    checkAddon(src, p.target);
    fs.copyFileSync(src, path.join(p.dir, p.addon));
    if (p.preload) {
      checkPreload(path.join(root, p.preload), p.target);
      fs.copyFileSync(path.join(root, p.preload), path.join(p.dir, p.preload));
    }
    const packed = npmPack(p.dir, out);
    const wanted = ['package.json', ...readJson(path.join(p.dir, 'package.json')).files];
    const lacking = wanted.filter((f) => !packed.files.includes(f));
    if (lacking.length) throw fail(`${packed.file} lacks ${lacking.join(', ')} (files: ${packed.files.join(', ')})`);
    log(`${path.basename(packed.file)}: ${fmtMB(packed.size)} (${packed.files.join(', ')})`);
    platforms.push({name: p.name, ...packed});
  }
  const rootPacked = packStaged(root, out);
  log(`${path.basename(rootPacked.file)}: ${fmtMB(rootPacked.size)}, ${rootPacked.files.length} files`);
  const gpuPacked = packStaged(root, out, 'gpu');
  log(`${path.basename(gpuPacked.file)}: ${fmtMB(gpuPacked.size)}, ${gpuPacked.files.length} files`);
  const seconds = (Date.now() - started) / 1000;
  log(`packed in ${seconds.toFixed(1)} s into ${out}`);
  return {root: rootPacked, gpu: gpuPacked, platforms, seconds};
}

function parseArgs(argv) {
  const opts = {out: ROOT, build: false, targets: null};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') opts.out = path.resolve(argv[++i]);
    else if (a.startsWith('--out=')) opts.out = path.resolve(a.slice(6));
    else if (a === '--build') opts.build = true;
    else if (a === '--target') opts.targets = [...(opts.targets || []), argv[++i]];
    else throw fail(`unknown argument ${a} (usage: node scripts/pack.js [--out DIR] [--build] [--target TRIPLE]...)`);
  }
  return opts;
}

async function main() {
  try {
    const res = await pack(parseArgs(process.argv.slice(2)));
    for (const f of [...res.platforms.map((p) => p.file), res.root.file, res.gpu.file]) process.stdout.write(`${f}\n`);
  } catch (err) {
    process.stderr.write(`tfjs-node-rs pack: ${err.code === 'TFJS_NODE_RS_PACK' || err.code === 'TFJS_NODE_RS_SETUP' ? err.message : err.stack}\n`);
    process.exitCode = 1;
  }
}

module.exports = {pack, describe, checkAddon, npmCommand, runNpm, ROOT_REQUIRED, ROOT_FORBIDDEN, ADDON_RPATH_DIRS};

if (require.main === module) main();
