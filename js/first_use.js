'use strict';
// libtensorflow arrives at the first require, not through an install script: package managers
// now block dependencies' install scripts (Bun and pnpm 10 by default, npm's allowScripts is
// heading there), and a package that needs one fails after a plain `bun add`. So the loader asks
// here, before the addon is loaded, whether this install can find libtensorflow:
//
//   - <root>/deps holds it (a link to this machine's shared copy under ~/.cache/tfjs-node-rs, or a
//     copy, or links into $TFJS_NODE_RS_LIBTENSORFLOW), as scripts/libtensorflow.js leaves it;
//   - the GPU package's <root>/cuda holds the CUDA libraries where they are wanted (a driver, or
//     TFJS_NODE_RS_CUDA=1);
//   - the directory of the addon that will load has deps/ leading to the same libraries: the
//     addon's first RUNPATH entry is $ORIGIN/deps/lib, which finds them whatever layout the
//     package manager chose (pnpm's .pnpm/<name>@<version>/node_modules/ puts the per-platform
//     package nowhere near the root package, so the RUNPATH's sibling entries miss there). Not on
//     Windows, which has no rpath: the loader puts <root>/deps/lib on PATH for the addon's load.
//
// A ready install costs a few stat calls. Otherwise scripts/libtensorflow.js runs once in a child
// process of the same runtime (Node, Bun or Deno), synchronously, because require is: it takes the
// shared copy, or unpacks it from a cached wheel, or downloads the wheel from the package index
// (pip's index, proxy and CA settings, sha256-checked), under a lock, so that processes starting
// at once wait for one another. Its log lines and a progress bar on a terminal go to stderr; its
// result comes back as JSON on stdout.

const fs = require('fs');
const path = require('path');
const {TF_VERSION, LIBS, ENV_DIR, GPU_PACKAGE} = require('./libtensorflow_facts');
const {cudaLibraryPaths, packageCudaDir, cudaSwitch} = require('./cuda');

/** The command that provides libtensorflow for the package at `root` by hand. */
function setupCommand(root) {
  return `node ${path.join(root, 'scripts', 'libtensorflow.js')}`;
}

function readJson(file, fsImpl) {
  try {
    return JSON.parse(fsImpl.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

function isDanglingLink(p, fsImpl) {
  try {
    return fsImpl.lstatSync(p).isSymbolicLink() && !fsImpl.existsSync(p);
  } catch {
    return false;
  }
}

function realpath(p, fsImpl) {
  try {
    return fsImpl.realpathSync(p);
  } catch {
    return null;
  }
}

/**
 * Why the install at `root` cannot load yet (a phrase for the log line), or null when it can.
 * addonDir: the directory of the addon file that will be loaded (null: none found, the load
 * error will say so). driver: () => this machine's NVIDIA driver or null.
 */
function missingPart({root, addonDir, env, fsImpl, driver, platform = process.platform}) {
  const deps = path.join(root, 'deps');
  const marker = readJson(path.join(deps, '.complete'), fsImpl);
  const cleaned = `${deps} no longer leads to the libraries (the cache was cleaned?)`;
  if (!marker || marker.version !== TF_VERSION) return isDanglingLink(deps, fsImpl) ? cleaned : `${deps} is not set up`;
  if (env[ENV_DIR] && marker.source !== path.resolve(env[ENV_DIR])) return `${ENV_DIR} names another directory than ${deps} was made from`;
  if (!LIBS.every((lib) => fsImpl.existsSync(path.join(deps, 'lib', lib)))) return cleaned;
  const pkg = readJson(path.join(root, 'package.json'), fsImpl);
  if (pkg && pkg.name === GPU_PACKAGE) {
    const mode = cudaSwitch(env);
    const wanted = mode === 'force' || (mode === 'auto' && driver());
    if (wanted && !cudaLibraryPaths(packageCudaDir(root)).every((lib) => fsImpl.existsSync(lib))) return 'the CUDA libraries are not set up';
  }
  if (platform !== 'win32' && addonDir && path.resolve(addonDir) !== path.resolve(root)) {
    const own = realpath(path.join(addonDir, 'deps'), fsImpl);
    if (!own || own !== realpath(deps, fsImpl)) return `${path.join(addonDir, 'deps')} does not lead to ${deps}`;
  }
  return null;
}

/**
 * How to run a script with the runtime running this one: `node`, `bun`, `deno run -A`, or
 * Electron's binary as Node.js. Returns [command, args, extra environment].
 */
function scriptCommand(script) {
  if (typeof globalThis.Deno !== 'undefined') return [process.execPath, ['run', '-A', script], {}];
  if (process.versions.electron) return [process.execPath, [script], {ELECTRON_RUN_AS_NODE: '1'}];
  return [process.execPath, [script], {}];
}

/**
 * Makes the install at `root` loadable (see the file's comment), running scripts/libtensorflow.js
 * when a part is missing. Throws makeError(message) when that fails. Returns the reason it ran,
 * or null when nothing was missing.
 */
function provideAtFirstUse({root, addonDir, env = process.env, fsImpl = fs, driver, makeError, run, log}) {
  const why = missingPart({root, addonDir, env, fsImpl, driver});
  if (!why) return null;
  // Required only here: child_process brings net and dgram with it, 4-5 ms of every start.
  if (!run) run = require('child_process').spawnSync;
  if (/\.zip[\\/]/.test(root)) {
    // Yarn Plug'n'Play serves packages from zip archives, where no libraries can be placed (and
    // @tensorflow/tfjs itself fails there: it requires `long` without declaring it).
    throw makeError(`${root} lies inside a zip archive (Yarn Plug'n'Play), where libtensorflow cannot be placed: ` +
      'set `nodeLinker: node-modules` in .yarnrc.yml and run `yarn install`.');
  }
  log(`first use of this install (${why}): providing libtensorflow ${TF_VERSION} now, once ...`);
  const script = path.join(root, 'scripts', 'libtensorflow.js');
  const [cmd, args, runtimeEnv] = scriptCommand(script);
  const extra = process.platform !== 'win32' && addonDir && path.resolve(addonDir) !== path.resolve(root) ? ['--addon-dir', addonDir] : [];
  const res = run(cmd, [...args, '--json', ...extra], {env: {...env, ...runtimeEnv}, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 1024 * 1024});
  if (res.error) throw makeError(`could not run ${setupCommand(root)} to provide libtensorflow: ${res.error.message}`);
  const lines = String(res.stdout || '').trim().split('\n');
  const result = readResult(lines[lines.length - 1]);
  if (res.status === 0 && result && result.ok) return why;
  const reason = result && result.message ? result.message : `it exited with ${res.signal ? `signal ${res.signal}` : `code ${res.status}`}`;
  throw makeError(`libtensorflow ${TF_VERSION} could not be provided: ${reason}\nOnce that is fixed, require the package again ` +
    `(or run \`${setupCommand(root)}\`).`);
}

function readResult(line) {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

module.exports = {provideAtFirstUse, missingPart, setupCommand};
