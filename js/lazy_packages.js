'use strict';
// tfjs's packages that `@tensorflow/tfjs` requires and a program may never use, loaded at the
// first read of one of their exports instead of by `require('tfjs-node-rs')`: tfjs-layers (a
// GraphModel program never uses it), tfjs-converter (a LayersModel program never does),
// tfjs-backend-webgl (Node has no WebGL), tfjs-backend-cpu (the `tensorflow` backend runs every
// op) and tfjs-data. Loading them took every start here 19, 18, 10, 7 and 3 ms
// (docs/architecture.md, "Cold starts").
//
// Before `@tensorflow/tfjs` loads, each one's entry in `require.cache` (which Node documents as
// writable) is a stand-in module: its exports are the package's export names as getters and
// setters, and the first get or set requires the package in its place and runs what waits for
// it (`whenLoaded`). `@tensorflow/tfjs`'s bundle only lists the names, defines getters of them
// and reads the packages' version strings, which the stand-ins answer without loading; the
// flags and backends the packages register as they load are registered in their name. The
// names are written below for one release (a test compares them with the packages); any other
// release, a package already loaded, Bun and Deno, or TFJS_NODE_RS_LAZY_PACKAGES=0 load as
// before.

const Module = require('module');
const fs = require('fs');
const path = require('path');

/** The release whose export names `EXPORTS` lists. */
const RELEASE = '4.22.0';

const EXPORTS = {
  '@tensorflow/tfjs-layers': [
    'Callback', 'CallbackList', 'CustomCallback', 'EarlyStopping', 'History', 'InputSpec',
    'LayerVariable', 'LayersModel', 'RNN', 'Sequential', 'SymbolicTensor', 'callbacks',
    'constraints', 'initializers', 'input', 'layers', 'loadLayersModel', 'metrics', 'model',
    'models', 'registerCallbackConstructor', 'regularizers', 'sequential', 'version_layers',
  ],
  '@tensorflow/tfjs-converter': [
    'GraphModel', 'deregisterOp', 'loadGraphModel', 'loadGraphModelSync', 'registerOp',
    'version_converter',
  ],
  '@tensorflow/tfjs-backend-webgl': [
    'GPGPUContext', 'MathBackendWebGL', 'forceHalfFloat', 'gpgpu_util', 'setWebGLContext',
    'version_webgl', 'webgl', 'webgl_util',
  ],
  '@tensorflow/tfjs-backend-cpu': ['MathBackendCPU', 'shared', 'version_cpu'],
  '@tensorflow/tfjs-data': [
    'CSVDataset', 'Dataset', 'FileDataSource', 'TextLineDataset', 'URLDataSource', 'array', 'csv',
    'func', 'generator', 'microphone', 'version_data', 'webcam', 'zip',
  ],
};

/**
 * The flags each package registers with tfjs's environment as it loads. Until it has, each is
 * registered here in its name: reading or setting it loads the package, whose own registration
 * then takes its place.
 */
const FLAGS = {
  '@tensorflow/tfjs-layers': ['TOPOLOGICAL_SORT_CACHE_MAX_ENTRIES'],
  '@tensorflow/tfjs-converter': ['KEEP_INTERMEDIATE_TENSORS'],
  '@tensorflow/tfjs-backend-webgl': [
    'HAS_WEBGL', 'WEBGL_VERSION', 'WEBGL_CHECK_NUMERICAL_PROBLEMS', 'WEBGL_BUFFER_SUPPORTED',
    'WEBGL_CPU_FORWARD', 'WEBGL_FORCE_F16_TEXTURES', 'WEBGL_PACK', 'WEBGL_PACK_NORMALIZATION',
    'WEBGL_PACK_CLIP', 'WEBGL_PACK_DEPTHWISECONV', 'WEBGL_PACK_BINARY_OPERATIONS',
    'WEBGL_PACK_UNARY_OPERATIONS', 'WEBGL_PACK_ARRAY_OPERATIONS', 'WEBGL_PACK_IMAGE_OPERATIONS',
    'WEBGL_PACK_REDUCE', 'WEBGL_LAZILY_UNPACK', 'WEBGL_CONV_IM2COL', 'WEBGL_PACK_CONV2DTRANSPOSE',
    'WEBGL_MAX_TEXTURE_SIZE', 'WEBGL_MAX_TEXTURES_IN_SHADER',
    'WEBGL_DISJOINT_QUERY_TIMER_EXTENSION_VERSION', 'WEBGL_DISJOINT_QUERY_TIMER_EXTENSION_RELIABLE',
    'WEBGL_RENDER_FLOAT32_CAPABLE', 'WEBGL_RENDER_FLOAT32_ENABLED', 'WEBGL_DOWNLOAD_FLOAT_ENABLED',
    'WEBGL_FENCE_API_ENABLED', 'WEBGL_SIZE_UPLOAD_UNIFORM', 'WEBGL_DELETE_TEXTURE_THRESHOLD',
    'WEBGL_FLUSH_THRESHOLD', 'CPU_HANDOFF_SIZE_THRESHOLD', 'WEBGL_USE_SHAPES_UNIFORMS',
    'TOPK_LAST_DIM_CPU_HANDOFF_SIZE_THRESHOLD', 'TOPK_K_CPU_HANDOFF_THRESHOLD', 'WEBGL_EXP_CONV',
    'SOFTWARE_WEBGL_ENABLED', 'WEBGL_MAX_SIZE_FOR_NARROW_TEXTURE',
    'WEBGL_AUTO_SQUARIFY_NARROW_TEXTURE_SHAPE', 'WEBGL2_ISNAN_CUSTOM', 'ENGINE_COMPILE_ONLY',
  ],
  '@tensorflow/tfjs-backend-cpu': [],
  '@tensorflow/tfjs-data': [],
};

/** The backends a package registers with tfjs as it loads (webgl's only in a browser). */
const BACKENDS = {
  '@tensorflow/tfjs-backend-cpu': {name: 'cpu', priority: 1},
};

const ENV_VARIABLE = 'TFJS_NODE_RS_LAZY_PACKAGES';

/** Each package as `@tensorflow/tfjs` resolves it: its file and, once loaded, its exports. */
const packages = new Map();

/**
 * Puts the stand-ins in place; call before `@tensorflow/tfjs` loads. `tfjsDir` is where that
 * package lies: its bundle's `require`s resolve from there.
 */
function deferPackages(tfjsDir, env = process.env) {
  const loadAllWithTfjs = env[ENV_VARIABLE] === '0' || process.versions.bun || process.versions.deno;
  let tfc = null;
  for (const name of Object.keys(EXPORTS)) {
    let file;
    try {
      file = require.resolve(name, {paths: [tfjsDir]});
    } catch {
      file = null;
    }
    // Unless turned off, already loaded or of another release; else it loads with
    // `@tensorflow/tfjs`, as before.
    const deferred = !loadAllWithTfjs && file !== null && require.cache[file] === undefined &&
        releaseOf(file, name) === RELEASE;
    const entry = {file, deferred, exports: null, before: [], after: []};
    packages.set(name, entry);
    if (!deferred) continue;
    const standIn = new Module(file, module);
    standIn.filename = file;
    standIn.loaded = true;
    standIn.exports = standInExports(name);
    require.cache[file] = standIn;
    tfc = tfc || require(require.resolve('@tensorflow/tfjs-core', {paths: [tfjsDir]}));
    registerFlags(tfc, name);
    registerBackend(tfc, name, entry);
  }
}

/**
 * Registers package `name`'s backend (`BACKENDS`) with a factory that loads the package and
 * makes the backend with the factory the package registers. The package's load, whatever
 * starts it (this factory, a read of an export, tfjs-backend-webgl requiring it), first takes
 * this registration away: registering over it would warn and keep this one.
 */
function registerBackend(tfc, name, entry) {
  if (BACKENDS[name] === undefined) return;
  const {name: backend, priority} = BACKENDS[name];
  const engine = tfc.engine();
  const factory = () => {
    load(name);
    return engine.registryFactory[backend].factory();
  };
  tfc.registerBackend(backend, factory, priority);
  entry.before.push(() => {
    const registered = engine.registryFactory[backend];
    if (registered !== undefined && registered.factory === factory) delete engine.registryFactory[backend];
  });
}

/** Registers package `name`'s flags (`FLAGS`) so that their first read or set loads it. */
function registerFlags(tfc, name) {
  const environment = tfc.env();
  for (const flag of FLAGS[name]) {
    const own = () => {
      load(name);
      return environment.flagRegistry[flag];
    };
    environment.registerFlag(flag, () => own().evaluationFn(), (value) => {
      const {setHook} = own();
      if (setHook != null) setHook(value);
    });
  }
}

/** The version in the package.json of package `name`, whose entry file is `file`. */
function releaseOf(file, name) {
  const marker = path.join('node_modules', ...name.split('/'));
  const at = file.lastIndexOf(marker);
  if (at < 0) return null;
  try {
    const json = fs.readFileSync(path.join(file.slice(0, at + marker.length), 'package.json'), 'utf8');
    return JSON.parse(json).version;
  } catch {
    return null;
  }
}

function standInExports(name) {
  const exports = {};
  Object.defineProperty(exports, '__esModule', {value: true});
  for (const key of EXPORTS[name]) {
    if (key.startsWith('version_')) {
      exports[key] = RELEASE;
      continue;
    }
    Object.defineProperty(exports, key, {
      enumerable: true,
      configurable: true,
      get: () => load(name)[key],
      set: (value) => {
        load(name)[key] = value;
      },
    });
  }
  return exports;
}

/** Package `name`'s exports, requiring it in its stand-in's place if it has not loaded. */
function load(name) {
  const entry = packages.get(name);
  if (entry.exports === null) {
    if (entry.deferred) {
      for (const before of entry.before.splice(0)) before();
      delete require.cache[entry.file];
    }
    entry.exports = require(entry.file || name);
    for (const after of entry.after.splice(0)) after(entry.exports);
  }
  return entry.exports;
}

/**
 * Runs `after(exports)` once package `name` (one of `EXPORTS`) has loaded: at once if it has,
 * else right after its first use loads it, with `before()` just before that. So what this
 * package adds to a tfjs package (its model classes' graph call sites, the progress bar) is in
 * place before a program can reach it.
 */
function whenLoaded(name, after, before = null) {
  const entry = packages.get(name);
  // Without deferPackages (a part of the package required on its own), everything loads.
  if (entry === undefined) {
    after(require(name));
  } else if (!entry.deferred || entry.exports !== null) {
    after(load(name));
  } else {
    if (before !== null) entry.before.push(before);
    entry.after.push(after);
  }
}

/** Package `name`'s exports if it has loaded, else null (it is not loaded for the asking). */
function loadedExports(name) {
  const entry = packages.get(name);
  if (entry === undefined) return require(name);
  return entry.deferred ? entry.exports : load(name);
}

module.exports = {
  deferPackages, whenLoaded, loadedExports, EXPORTS, FLAGS, BACKENDS, RELEASE, ENV_VARIABLE,
};
