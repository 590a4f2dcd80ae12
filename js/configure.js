'use strict';
// Runtime options: TF's thread pools and GPU memory, fixed before TensorFlow makes its first
// context (TF sizes its process-wide intra-op pool from the first device's options, and every
// context and session after it shares that pool). This module loads no TensorFlow, so a
// program can configure before `require('tfjs-node-rs')`, which starts the runtime:
//
//   require('tfjs-node-rs/configure').configure({intraOpThreads: 2});
//   const tf = require('tfjs-node-rs');
//
// or set the environment variables (for programs you do not control). `tf.node.configure`
// is the same function; once the runtime has started it accepts only the options in force.

const {Writer} = require('./node/proto');

/** Option -> environment variable, and how to read it. */
const ENVIRONMENT = {
  intraOpThreads: ['TFJS_NODE_RS_INTRA_OP_THREADS', readCount],
  interOpThreads: ['TFJS_NODE_RS_INTER_OP_THREADS', readCount],
  allowGrowth: ['TFJS_NODE_RS_GPU_ALLOW_GROWTH', readSwitch],
  memoryLimitMB: ['TFJS_NODE_RS_GPU_MEMORY_LIMIT_MB', readCount],
  visibleDevices: ['TFJS_NODE_RS_GPU_VISIBLE_DEVICES', readList],
};

/** The options requested so far (merged over the environment's), shared by both entries. */
const state = {requested: null, started: null};

/**
 * Requests runtime options: `{intraOpThreads, interOpThreads, gpu: {allowGrowth,
 * memoryLimitMB, visibleDevices}}` (each optional; threads 0 or absent: TF's default, one per
 * core). Throws a TypeError or RangeError for a malformed option, and, once the runtime has
 * started, an Error (code `TFJS_NODE_RS_STARTED`) unless the options are those in force.
 */
function configure(options = {}) {
  const wanted = normalize({...fromEnvironment(), ...flatten(options)});
  if (state.started !== null) {
    if (!sameOptions(wanted, state.started)) {
      const e = new Error('tf.node.configure: TensorFlow\'s runtime already started (when ' +
                          'tfjs-node-rs was required) with ' + describe(state.started) +
                          '; call require(\'tfjs-node-rs/configure\').configure() before ' +
                          'requiring tfjs-node-rs, or set the TFJS_NODE_RS_* environment ' +
                          'variables');
      e.code = 'TFJS_NODE_RS_STARTED';
      throw e;
    }
    return;
  }
  state.requested = wanted;
}

/**
 * Called once by js/index.js before the runtime starts: hands the options requested (or the
 * environment's) to the binding.
 */
function applyTo(binding) {
  const options = state.requested !== null ? state.requested : normalize(fromEnvironment());
  binding.configureRuntime(configProto(options), options.intraOpThreads, options.interOpThreads);
  state.started = options;
  return options;
}

/** The options in force once started (null before). */
function started() {
  return state.started;
}

/** `{gpu: {...}}` flattened into the option names ENVIRONMENT lists. */
function flatten(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('tf.node.configure: options must be an object');
  }
  const {gpu, ...rest} = options;
  for (const key of Object.keys(rest)) {
    if (key !== 'intraOpThreads' && key !== 'interOpThreads') {
      throw new TypeError(`tf.node.configure: unknown option '${key}'`);
    }
  }
  if (gpu === undefined) return rest;
  if (gpu === null || typeof gpu !== 'object') {
    throw new TypeError('tf.node.configure: gpu must be an object');
  }
  for (const key of Object.keys(gpu)) {
    if (!['allowGrowth', 'memoryLimitMB', 'visibleDevices'].includes(key)) {
      throw new TypeError(`tf.node.configure: unknown option 'gpu.${key}'`);
    }
  }
  return {...rest, ...gpu};
}

/** The options set by environment variables. */
function fromEnvironment() {
  const options = {};
  for (const [option, [variable, read]] of Object.entries(ENVIRONMENT)) {
    const text = process.env[variable];
    if (text !== undefined && text !== '') options[option] = read(text, variable);
  }
  return options;
}

function readCount(text, variable) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new RangeError(`${variable} must be a whole number >= 0, got '${text}'`);
  }
  return n;
}

function readSwitch(text, variable) {
  if (text === '1' || text === 'true') return true;
  if (text === '0' || text === 'false') return false;
  throw new RangeError(`${variable} must be 1 or 0, got '${text}'`);
}

function readList(text, variable) {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '')
      .map((item) => readCount(item, variable));
}

/** Every option with its value or default, checked. */
function normalize(o) {
  const count = (name, value, max) => {
    if (value === undefined) return 0;
    if (!Number.isInteger(value) || value < 0 || value > max) {
      throw new RangeError(`tf.node.configure: ${name} must be a whole number in 0..${max}, ` +
                           `got ${value}`);
    }
    return value;
  };
  if (o.allowGrowth !== undefined && typeof o.allowGrowth !== 'boolean') {
    throw new TypeError('tf.node.configure: gpu.allowGrowth must be a boolean');
  }
  const devices = o.visibleDevices === undefined ? [] : o.visibleDevices;
  if (!Array.isArray(devices) || !devices.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new TypeError('tf.node.configure: gpu.visibleDevices must be an array of GPU ' +
                        'indices');
  }
  return {
    intraOpThreads: count('intraOpThreads', o.intraOpThreads, 4096),
    interOpThreads: count('interOpThreads', o.interOpThreads, 4096),
    allowGrowth: o.allowGrowth === true,
    memoryLimitMB: count('gpu.memoryLimitMB', o.memoryLimitMB, 1 << 24),
    visibleDevices: devices.slice(),
  };
}

function sameOptions(a, b) {
  return a.intraOpThreads === b.intraOpThreads && a.interOpThreads === b.interOpThreads &&
      a.allowGrowth === b.allowGrowth && a.memoryLimitMB === b.memoryLimitMB &&
      a.visibleDevices.join() === b.visibleDevices.join();
}

function describe(o) {
  const threads = (n) => n === 0 ? 'one per core' : String(n);
  return `intraOpThreads ${threads(o.intraOpThreads)}, interOpThreads ` +
      `${threads(o.interOpThreads)}, gpu ${JSON.stringify({allowGrowth: o.allowGrowth,
        memoryLimitMB: o.memoryLimitMB, visibleDevices: o.visibleDevices})}`;
}

/**
 * The options as a serialized `ConfigProto` (tensorflow/core/protobuf/config.proto): the
 * thread counts, and `gpu_options` (allow_growth, visible_device_list, and one virtual device
 * of `memoryLimitMB` per visible GPU). Empty for TF's defaults.
 */
function configProto(o) {
  const config = new Writer();
  if (o.intraOpThreads > 0) config.varint(2, o.intraOpThreads);  // intra_op_parallelism_threads
  if (o.interOpThreads > 0) config.varint(5, o.interOpThreads);  // inter_op_parallelism_threads
  const gpu = new Writer();
  if (o.allowGrowth) gpu.varint(4, 1);                              // allow_growth
  if (o.visibleDevices.length > 0) gpu.string(5, o.visibleDevices.join(','));  // visible_device_list
  if (o.memoryLimitMB > 0) {
    const experimental = new Writer();
    for (let k = 0; k < Math.max(1, o.visibleDevices.length); k++) {
      const virtual = new Writer();
      virtual.float(1, o.memoryLimitMB);                            // memory_limit_mb
      experimental.message(1, virtual);                             // virtual_devices
    }
    gpu.message(9, experimental);                                   // experimental
  }
  if (gpu.length > 0) config.message(6, gpu);                       // gpu_options
  return config.finish();
}

/**
 * A SavedModel session's own options (`loadSavedModel`'s `{interOpThreads}`) as `ConfigProto`
 * fields merged over the process's: an inter-op pool of its own of that size
 * (inter_op_parallelism_threads, use_per_session_threads). Empty for none.
 */
function sessionConfigProto(options, label) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${label}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'interOpThreads') throw new TypeError(`${label}: unknown option '${key}'`);
  }
  const threads = options.interOpThreads;
  const config = new Writer();
  if (threads !== undefined) {
    if (!Number.isInteger(threads) || threads < 1 || threads > 4096) {
      throw new RangeError(`${label}: interOpThreads must be a whole number in 1..4096, got ` +
                           `${threads}`);
    }
    config.varint(5, threads);                                      // inter_op_parallelism_threads
    config.varint(9, 1);                                            // use_per_session_threads
  }
  return config.finish();
}

module.exports = {configure, applyTo, started, configProto, sessionConfigProto};
