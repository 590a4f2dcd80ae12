'use strict';
// V8's code cache for the modules `require('tfjs-node-rs')` loads: tfjs's bundles (about 7 MB of
// JS) and this package's own. Compiling them is a large part of a cold start; with the cache a
// process starts from the bytecode that an earlier one compiled, including the functions that
// the earlier one went on to call (the cache is taken at its exit, not after the load).
//
// Not Node's own `module.enableCompileCache()`: it turns the cache on for every module the
// program loads afterwards, and cannot be turned off again (and Node 20 lacks it). This caches
// only what is compiled while tfjs-node-rs itself loads: the hook on `Module.prototype._compile`
// is in place for that one synchronous `require` and taken away at its end.
//
// Off unless asked for: `TFJS_NODE_RS_CODE_CACHE=1` keeps it in `.code-cache/` in this package's
// folder, which has the same owner as the code it caches (a shared folder such as /tmp would let
// another user plant bytecode); any other value names the folder. Why not by default: with it,
// a model's training steps right after `require` ran 10-20% slower in the suite's benchmark
// worker (docs/architecture.md, "Cold starts"). A folder that cannot be written (a read-only
// deployment) means no cache, and no work at exit. Under it, one folder per architecture and V8
// version, flags and CPU (V8 rejects a cache made under others), one file per module, named from
// the module's path and its file's identity (inode, size, mtime and ctime: the kernel sets ctime
// on every change, so a replaced file, even one of the same size and npm's fixed mtime, gets a
// new name). V8 checks the rest, and a cache it rejects is made again.

// Only these three when the cache is off (the default): requiring crypto, v8 and vm here cost a
// start about 4 ms (this module's load took 5.0-6.1 ms with them, 1.6-1.7 without), so they load
// when the cache is on.
const Module = require('module');
const fs = require('fs');
const path = require('path');

const ENV_VARIABLE = 'TFJS_NODE_RS_CODE_CACHE';

const counts = {directory: null, hits: 0, misses: 0, rejected: 0};

/** The cache's folder for this runtime, or null when caching is off or not possible here. */
function cacheDirectory(packageRoot, env = process.env) {
  const setting = env[ENV_VARIABLE];
  if (setting === undefined || setting === '' || setting === '0') return null;
  // Node's own compile cache already covers these modules; Bun and Deno compile their own way.
  if (typeof Module.getCompileCacheDir === 'function' && Module.getCompileCacheDir()) return null;
  if (process.versions.bun || process.versions.deno) return null;
  // Compiling here would bypass what hooks Node's compile: source maps, coverage, and Node 20's
  // policy manifests (integrity checks).
  if (process.sourceMapsEnabled || env.NODE_V8_COVERAGE) return null;
  if ([...process.execArgv, env.NODE_OPTIONS || ''].some((a) => a.includes('--experimental-policy'))) return null;
  const base = setting === '1' ? path.join(packageRoot, '.code-cache') : path.resolve(setting);
  // The tag V8 derives from its version, flags and CPU features: a cache made under another
  // is rejected.
  return path.join(base, `${process.arch}-${require('v8').cachedDataVersionTag().toString(16)}`);
}

/** Whether `dir` exists (made if missing) and this process may write in it. */
function writable(dir) {
  try {
    fs.mkdirSync(dir, {recursive: true});
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** The cache file of the module at `filename`, or null if the file cannot be identified. */
function entryPath(dir, filename) {
  let stat;
  try {
    stat = fs.statSync(filename, {bigint: true});
  } catch {
    return null;
  }
  const identity = [filename, stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs].join('\0');
  const hash = require('crypto').createHash('sha256').update(identity).digest('hex');
  return path.join(dir, hash.slice(0, 32));
}

function readEntry(file) {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Writes `data` to `file` whole or not at all: processes starting together may race here. */
function writeEntry(file, data) {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  try {
    fs.writeFileSync(temporary, data);
    fs.renameSync(temporary, file);
  } catch {
    fs.rmSync(temporary, {force: true});
  }
}

/** `require` for code compiled here, as Node gives a module its own. */
function requireFor(module) {
  const require = (id) => module.require(id);
  require.resolve = (request, options) => Module._resolveFilename(request, module, false, options);
  require.resolve.paths = (request) => Module._resolveLookupPaths(request, module);
  require.main = process.mainModule;
  require.extensions = Module._extensions;
  require.cache = Module._cache;
  return require;
}

const WRAPPER_START = Module.wrapper[0];

/**
 * Caches the code of the CommonJS modules compiled from now until the returned function is
 * called. Modules that missed the cache have theirs written when the process exits.
 */
function cacheModulesLoadedNow(packageRoot) {
  const dir = cacheDirectory(packageRoot);
  if (dir === null || !writable(dir)) return () => {};
  counts.directory = dir;
  const vm = require('vm');
  const compile = Module.prototype._compile;
  const toWrite = [];

  Module.prototype._compile = function compileWithCache(content, filename, format) {
    const commonJs = format === undefined || format === 'commonjs';
    const file = commonJs && !content.startsWith('#!') ? entryPath(dir, filename) : null;
    if (file === null) return compile.call(this, content, filename, format);
    const cachedData = readEntry(file);
    let script;
    try {
      script = new vm.Script(Module.wrap(content), {
        filename,
        columnOffset: -WRAPPER_START.length,
        cachedData,
        importModuleDynamically: vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
      });
    } catch {
      // A syntax error, or ES module syntax that Node's own compile would detect and load as
      // such: Node's compile says which.
      return compile.call(this, content, filename, format);
    }
    if (cachedData !== undefined && !script.cachedDataRejected) {
      counts.hits++;
    } else {
      if (cachedData !== undefined) counts.rejected++;
      counts.misses++;
      toWrite.push({file, script});
    }
    const moduleFunction = script.runInThisContext({displayErrors: true});
    return moduleFunction.call(this.exports, this.exports, requireFor(this), this, filename,
                               path.dirname(filename));
  };

  process.once('exit', () => {
    for (const {file, script} of toWrite) writeEntry(file, script.createCachedData());
  });
  return () => {
    Module.prototype._compile = compile;
  };
}

/** Where the cache is (null: off) and how this process's modules fared in it. */
function codeCacheStats() {
  return {...counts};
}

module.exports = {cacheModulesLoadedNow, codeCacheStats, entryPath, ENV_VARIABLE};
