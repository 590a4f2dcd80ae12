'use strict';
// The tfjs KernelBackend over the native binding.
//
// Data storage: each tensor's data is a `TensorData` record, which is also
// the `dataId` tfjs holds and the `TensorInfo` kernels return (its `dataId`
// points at itself). A record holds either the values the user wrote (not yet
// uploaded) or the id of a native TF tensor, never both after the first use.
//
// Native ids can have several owners: a reshape is a new record over the same
// id (made native only when an op needs that shape, and often never: tfjs's
// matMul reshapes 2-D operands to 3-D and back), and equal scalars share one
// uploaded constant. `shareId` / `dropId` count the owners.
//
// This file is the ONE place that calls the binding's `executeOp`
// (`TensorFlowBackend#exec`).

const {AsyncLocalStorage} = require('node:async_hooks');
const tfc = require('@tensorflow/tfjs-core');
const {RESULT_CAST, sizeOf} = require('./dtypes');
const {tfError} = require('./errors');
const {OpRunner} = require('./op_runner');

/**
 * The records a backend holds data for, in reused slots of an array (`rec.slot`). Not a Set:
 * adding and deleting a Set entry per tensor made V8 grow its heap in synchronous loops that the
 * event loop never interrupts (100k decodeJpeg + dispose on Node.js 26: RSS +12.8 MB with a Set,
 * +0.9 MB with slots).
 */
class LiveRecords {
  constructor() {
    this.slots = [];
    this.free = [];
    this.size = 0;
  }

  add(rec) {
    if (rec.slot >= 0) return;
    rec.slot = this.free.length > 0 ? this.free.pop() : this.slots.length;
    this.slots[rec.slot] = rec;
    this.size++;
  }

  delete(rec) {
    if (rec.slot < 0 || this.slots[rec.slot] !== rec) return;
    this.slots[rec.slot] = null;
    this.free.push(rec.slot);
    rec.slot = -1;
    this.size--;
  }

  /** The records held now, as an array (safe to release while iterating it). */
  all() {
    return this.slots.filter((rec) => rec !== null);
  }
}

class TensorData {
  constructor(values, shape, dtype, id, refCount) {
    this.dataId = this;     // so that a record is also a TensorInfo
    this.shape = shape;
    this.dtype = dtype;
    this.id = id;           // native tensor id, -1 until uploaded
    this.nativeShape = shape;  // the shape TF knows for `id`; differs in a lazy reshape
    this.values = values;   // values written by the user, until uploaded
    this.view = null;       // cached zero-copy view of the native buffer
    this.refCount = refCount;
    this.slot = -1;         // its place in the backend's LiveRecords, -1 when not held
  }
}

/**
 * The attrs array for `key` in `cache`, built once: kernels that pass the same array object
 * each call let the op runner find its prepared op without rebuilding its lookup key.
 */
function cachedAttrs(cache, key, build) {
  let attrs = cache.get(key);
  if (attrs === undefined) {
    attrs = build();
    cache.set(key, attrs);
  }
  return attrs;
}

/** Memoised `{name, type: 'type', value}` attr objects. */
const TYPE_ATTRS = new Map();
function typeAttr(name, dtype) {
  let byType = TYPE_ATTRS.get(name);
  if (byType === undefined) {
    byType = new Map();
    TYPE_ATTRS.set(name, byType);
  }
  let attr = byType.get(dtype);
  if (attr === undefined) {
    attr = Object.freeze({name, type: 'type', value: dtype});
    byType.set(dtype, attr);
  }
  return attr;
}

const CONST_CACHE_LIMIT = 256;

/**
 * Small constant tensors (axes, perms, scalars) that kernels pass to TF as
 * inputs, cached by value. Two generations: when the young one is full it
 * becomes the old one and the previous old one is freed, so an id handed out
 * stays valid for at least CONST_CACHE_LIMIT further insertions.
 */
class ConstCache {
  constructor(backend) {
    this.backend = backend;
    this.young = new Map();
    this.old = new Map();
  }
  get(key, make) {
    let id = this.young.get(key);
    if (id !== undefined) return id;
    id = this.old.get(key);
    if (id === undefined) {
      id = make();
    } else {
      this.old.delete(key);
    }
    if (this.young.size >= CONST_CACHE_LIMIT) {
      for (const oldId of this.old.values()) this.backend.dropId(oldId);
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, id);
    return id;
  }
  get size() {
    return this.young.size + this.old.size;
  }
  clear() {
    for (const id of this.young.values()) this.backend.dropId(id);
    for (const id of this.old.values()) this.backend.dropId(id);
    this.young.clear();
    this.old.clear();
  }
}

/**
 * The `tf.node.withDevice` scope of the current async context, if any: `{device, open, outer}`,
 * `outer` the scope it was entered in. A scope closes when its function returns or its Promise
 * settles; work it started that goes on after that (a timer, a Promise not awaited) runs in
 * the open scope around it, or unplaced.
 */
const deviceScopes = new AsyncLocalStorage();

/** Bindings whose executor is stopped when the process exits. */
const stoppedAtExit = new WeakSet();

/**
 * The executor thread must not run a graph while `process.exit()`'s destructors tear TF
 * down (no env cleanup hook runs first): stop it from the `'exit'` event, once per binding.
 * Then libtensorflow's read-only pages are let go of on another core while Node tears down,
 * rather than after it (src/library_pages.rs; the process's main thread only).
 */
function stopBackgroundWorkAtExit(binding) {
  if (stoppedAtExit.has(binding)) return;
  stoppedAtExit.add(binding);
  process.once('exit', () => {
    binding.stopBackgroundWork();
    binding.releaseLibraryPages();
  });
}

class TensorFlowBackend extends tfc.KernelBackend {
  constructor(binding) {
    super();
    this.binding = binding;
    this.ops = new OpRunner(binding);
    this.foreign = new WeakMap();  // dataIds of other backends moved here
    this.live = new LiveRecords();  // every record this backend holds data for
    this.consts = new ConstCache(this);
    /** Native ids with more than one owner -> their owner count (absent: one owner). */
    this.sharedIds = new Map();
    /** The device TF places ops on now, or null (`setDeviceScope`). */
    this.deviceScope = null;
    /** Device scopes (`runInDeviceScope`) not closed yet, in any async context. */
    this.openDeviceScopes = 0;
    /** Their devices -> how many of them name it. */
    this.openScopeDevices = new Map();
    /** Clusters connected to so far: a call graph placed on one runs on no later one. */
    this.clusters = 0;
    this.isUsingGpuDevice = binding.isUsingGpuDevice();
    stopBackgroundWorkAtExit(binding);
    /** Repeated runs of ops execute as one graph (src/ops/deferred.rs), so fusing ops buys less. */
    this.deferring = binding.isDeferring();
    this.castAttrsByPair = new Map();
    this.reshapeAttrsByDtype = new Map();
  }

  // ---------------------------------------------------------------- storage

  /** The record of a dataId; data of another backend is moved here first. */
  record(dataId) {
    const rec = this.peek(dataId);
    if (rec !== undefined) return rec;
    // Data owned by another backend (or one of ours moved away): move it.
    const engine = tfc.engine();
    if (!engine.state.tensorInfo.has(dataId)) {
      throw new Error('Tensor is disposed.');
    }
    engine.moveData(this, dataId);
    return this.peek(dataId);
  }

  /** Looks a dataId up without moving data. */
  peek(dataId) {
    if (dataId instanceof TensorData) {
      return dataId.refCount > 0 ? dataId : undefined;
    }
    return this.foreign.get(dataId);
  }

  write(values, shape, dtype) {
    const rec = new TensorData(values, shape, dtype, -1, 1);
    this.live.add(rec);
    if (this.ops.recording !== null) this.ops.recording.wrote(rec);
    return rec;
  }

  move(dataId, values, shape, dtype, refCount) {
    if (dataId instanceof TensorData) {
      // One of our own records coming back from another backend.
      dataId.values = values;
      dataId.shape = shape;
      dataId.dtype = dtype;
      dataId.id = -1;
      dataId.nativeShape = shape;
      dataId.view = null;
      dataId.refCount = refCount;
      this.live.add(dataId);
    } else {
      const rec = new TensorData(values, shape, dtype, -1, refCount);
      this.foreign.set(dataId, rec);
      this.live.add(rec);
    }
  }

  makeTensorInfo(shape, dtype, values) {
    return this.write(values, shape, dtype);
  }

  /** Typed array on 64-byte-aligned native memory (shared with TF on upload). */
  alloc(dtype, size) {
    if (dtype === 'string') return new Array(size);
    return this.binding.alloc(dtype, size);
  }

  readSync(dataId) {
    const rec = this.record(dataId);
    if (this.ops.recording !== null) this.ops.recording.read(rec);
    if (this.othersHold(dataId, rec)) {
      // Another tensor holds the same data (a clone, a variable and the tensor it was set from,
      // a lazy reshape, a shared constant): a fresh copy per read, so that writing into it
      // cannot change the other one. The binding finds the sharers TF knows of itself.
      return rec.values !== null ? rec.values.slice() : this.binding.tensorDataSync(rec.id, true);
    }
    if (rec.values !== null) return rec.values;
    if (rec.view === null) rec.view = this.binding.tensorDataSync(rec.id, false);
    return rec.view;
  }

  /** Whether tensors other than one hold `rec`'s data or its native tensor. */
  othersHold(dataId, rec) {
    if (rec.refCount > 1 || (rec.id >= 0 && this.sharedIds.has(rec.id))) return true;
    const info = tfc.engine().state.tensorInfo.get(dataId);
    return info !== undefined && info.refCount > 1;
  }

  /**
   * Resolves once the values are computed, without holding the JS thread while TF computes
   * them: a deferred run or a call graph producing them runs on the binding's executor thread
   * (`whenReady`). The record is held meanwhile, so a dispose during the wait frees it after.
   */
  async read(dataId) {
    const rec = this.record(dataId);
    if (this.ops.recording !== null) this.ops.recording.read(rec);
    const ready = rec.id >= 0 ? this.binding.whenReady(rec.id) : null;
    if (ready === null) return this.readSync(dataId);
    rec.refCount++;
    try {
      await ready;
    } finally {
      rec.refCount--;
    }
    if (rec.refCount > 0) return this.readSync(dataId);
    // Disposed while computing: the values are still the caller's to read.
    const values = this.binding.tensorDataSync(rec.id, true);
    this.release(rec);
    return values;
  }

  disposeData(dataId, force = false) {
    const rec = this.peek(dataId);
    if (rec === undefined) return true;
    rec.refCount--;
    if (!force && rec.refCount > 0) return false;
    this.release(rec);
    if (!(dataId instanceof TensorData)) this.foreign.delete(dataId);
    return true;
  }

  release(rec) {
    if (rec.id >= 0) this.dropId(rec.id);
    rec.id = -1;
    rec.values = null;
    rec.view = null;
    rec.refCount = 0;
    this.live.delete(rec);
  }

  refCount(dataId) {
    const rec = this.peek(dataId);
    return rec === undefined ? 0 : rec.refCount;
  }

  incRef(dataId) {
    this.record(dataId).refCount++;
  }

  numDataIds() {
    return this.live.size;
  }

  memory() {
    const s = this.binding.stats();
    return {
      unreliable: false,
      numBytesInTF: s.liveBytes,
      numNativeTensors: s.liveTensors,
      numCachedConstants: this.consts.size,
    };
  }

  /**
   * Native tensors alive in this thread's TF context for tfjs tensors (tfjs-node's leak-check
   * counter). The backend's cache of small constants (axes, begin/size vectors), bounded by
   * CONST_CACHE_LIMIT, is left out: tfjs-node makes those per op, so a kernel's first use would
   * otherwise read as a leak. `memory()` reports both.
   */
  getNumOfTFTensors() {
    return this.binding.stats().liveTensors - this.consts.size;
  }

  // ---------------------------------------------------------------- SavedModel sessions

  /**
   * A session id for the SavedModel in `dir` tagged `tags` (shared by equal loads, unless
   * one asks for `ownSession`); `sessionConfig`: the session's own ConfigProto fields
   * (js/configure.js).
   */
  loadSavedModel(dir, tags, sessionConfig, ownSession = false) {
    return this.binding.loadSavedModel(dir, tags, sessionConfig, ownSession);
  }

  /** Runs session `id` on native input ids; returns the raw outputs `[{id, shape, dtype}]`. */
  runSavedModel(id, inputIds, inputNames, outputNames) {
    this.notRecordable('runs a SavedModel');
    return this.binding.runSavedModel(id, inputIds, inputNames, outputNames);
  }

  /**
   * `runSavedModel` on the executor thread: the JS thread is free until the outputs exist.
   * Inputs and names are checked at the call; TF's errors of the run reject the promise.
   */
  async runSavedModelAsync(id, inputIds, inputNames, outputNames) {
    this.notRecordable('runs a SavedModel');
    const job = this.binding.runSavedModelInBackground(id, inputIds, inputNames, outputNames);
    await this.binding.whenJobDone(job);
    return this.binding.takeJobOutputs(job);
  }

  deleteSavedModel(id) {
    this.binding.deleteSavedModel(id);
  }

  /** Distinct SavedModel sessions loaded (models sharing a session count once). */
  getNumOfSavedModels() {
    return this.binding.getNumOfSavedModels();
  }

  // ---------------------------------------------------------------- the runtime and the cluster

  /** libtensorflow's version (`TF_Version`). */
  tfVersion() {
    return this.binding.tfVersion();
  }

  /** The library's file, the configured thread counts (0: one per core) and the cores. */
  runtimeInfo() {
    return this.binding.runtimeInfo();
  }

  /** Loads a custom op library into TF; returns the names of its ops. */
  loadOpLibrary(path) {
    return this.binding.loadOpLibrary(path);
  }

  /** Starts recording what TF runs (js/node/profile.js); throws while one is being taken. */
  startProfile() {
    this.binding.startProfile();
  }

  /** Stops recording: `{spans, jsTid}`. */
  stopProfile() {
    return this.binding.stopProfile();
  }

  /** Now on the profile's clock: µs since the Unix epoch. */
  profileClockUs() {
    return this.binding.profileClockUs();
  }

  /** Pauses deferred runs of ops (or resumes them): ops run at once while paused. */
  pauseDeferring(paused) {
    this.binding.pauseDeferring(paused);
  }

  /** Starts TF's gRPC server in this process for the cluster in `serverDef` (bytes). */
  startServer(serverDef) {
    return this.binding.startServer(serverDef);
  }

  /** Makes the context a client of the cluster in `serverDef`, as task `localTask`. */
  connectToCluster(serverDef, localTask, timeoutMs) {
    this.binding.connectToCluster(serverDef, localTask, timeoutMs);
    this.clusters++;
  }

  /** Starts this task's server in the context for collective ops across `serverDef`'s cluster. */
  enableCollectiveOps(serverDef) {
    this.binding.enableCollectiveOps(serverDef);
  }

  /** The devices the context can place ops on: `[{name, deviceType}]`. */
  listDevices() {
    return this.binding.listDevices();
  }

  /**
   * Places every op from now on on `device` (null: TF places them); call graphs compiled
   * meanwhile run there as TF functions (`deviceScope` keys them apart).
   */
  setDeviceScope(device) {
    this.binding.setDeviceScope(device);
    this.deviceScope = device;
  }

  /**
   * Runs `fn()` with the ops it issues placed on `device` (`tf.node.withDevice`), until it
   * returns, or when it returns a Promise, until that settles: its async continuations (after
   * `await`s, in timers it sets) run in the scope too, as `deviceScopes` carries the scope
   * across them. Returns what `fn` returns, or a Promise of it. Ops of other async contexts
   * meanwhile (a timer set before, another request's handler) run where their own scope says:
   * TF's device scope is one for the process, so `followDeviceScope` sets it to the current
   * context's before each op.
   */
  runInDeviceScope(device, fn) {
    const scope = {device, open: true, outer: deviceScopes.getStore()};
    this.setDeviceScope(device);
    this.openDeviceScopes++;
    this.openScopeDevices.set(device, (this.openScopeDevices.get(device) ?? 0) + 1);
    let result;
    try {
      result = deviceScopes.run(scope, fn);
    } catch (e) {
      this.closeDeviceScope(scope, true);
      throw e;
    }
    if (result === null || typeof result !== 'object' || typeof result.then !== 'function') {
      this.closeDeviceScope(scope, false);
      return result;
    }
    // Back in the caller's context, whose ops run where its scope (if any) says.
    this.followDeviceScope();
    return Promise.resolve(result).then((value) => {
      this.closeDeviceScope(scope, false);
      return value;
    }, (e) => {
      this.closeDeviceScope(scope, true);
      throw e;
    });
  }

  /**
   * Closes `scope`, then brings here the variables left on remote devices, but those on the
   * devices of scopes still open (an outer scope's fit, whose next steps use them there; a
   * sync scope in a fit's callback must not bring its weights here each batch). `failed`:
   * `fn` threw or rejected, whose error stays the scope's (a variable lost with a worker that
   * died during a fit goes with that error); else a variable that cannot come back is the error.
   */
  closeDeviceScope(scope, failed) {
    scope.open = false;
    const sharing = this.openScopeDevices.get(scope.device) - 1;
    if (sharing === 0) {
      this.openScopeDevices.delete(scope.device);
    } else {
      this.openScopeDevices.set(scope.device, sharing);
    }
    if (--this.openDeviceScopes === 0) {
      // Node.js before 24 carries a store across awaits with async hooks on every Promise
      // (130 -> 420 ns per awaited Promise on Node.js 20, whatever the program): off while no
      // scope is open. Stores kept by work that goes on belong to closed scopes, ignored.
      deviceScopes.disable();
    }
    this.followDeviceScope();
    try {
      this.bringVariablesHere('tf.node.withDevice', [...this.openScopeDevices.keys()]);
    } catch (e) {
      if (!failed) throw e;
    }
  }

  /**
   * Copies here (once) every variable's tensor that lives on another task's device. A call
   * compiled in a remote scope (a training step on a worker) leaves the values it assigns
   * there, for its next call to use unsent (`compileCall`'s `returned`); out of the scope, a
   * local predict, `getWeights` or `save` would fetch them at every use. Variables only: other
   * tensors a program leaves on a worker are its own, read back when used. A variable's value
   * still being computed by a call in flight (another scope's) stays; its scope brings it.
   * Nothing to do outside a cluster. Variables on the devices `keepOn` stay. `fn` names the
   * API for the error of a variable that cannot come back (its worker is gone), which is then
   * dropped: reading it fails.
   */
  bringVariablesHere(fn, keepOn) {
    if (this.clusters === 0) return;
    const ids = [];
    for (const variable of Object.values(tfc.engine().registeredVariables)) {
      const rec = this.peek(variable.dataId);
      if (rec !== undefined && rec.id >= 0) ids.push(rec.id);
    }
    if (ids.length === 0) return;
    try {
      this.binding.bringTensorsHere(ids, keepOn);
    } catch (e) {
      e.message = `${fn}: a variable's value on a remote device could not be copied to this ` +
                  `process, and is lost: ${e.message}`;
      throw e;
    }
  }

  /**
   * Sets TF's device scope to the current async context's: the device of its innermost open
   * scope, or null. Callers skip it while no scope is open (`openDeviceScopes`), when TF's
   * scope is null already: the ops of a program that never places any pay one comparison.
   */
  followDeviceScope() {
    let scope = deviceScopes.getStore();
    while (scope !== undefined && !scope.open) scope = scope.outer;
    const device = scope === undefined ? null : scope.device;
    if (device !== this.deviceScope) this.setDeviceScope(device);
  }

  /** Where call graphs compiled now run, for their keys: '' (here) or a device of a cluster. */
  placementKey() {
    return this.deviceScope === null ? '' : `${this.deviceScope}@${this.clusters}`;
  }

  /** The device that ran the op producing native tensor `id` (`backing`: that holds it). */
  tensorDevice(id, backing) {
    return this.binding.tensorDevice(id, backing);
  }

  async time(f) {
    const start = process.hrtime.bigint();
    f();
    return {kernelMs: Number(process.hrtime.bigint() - start) / 1e6};
  }

  timerAvailable() {
    return true;
  }

  floatPrecision() {
    return 32;
  }

  /** Frees every native tensor this backend holds (tfjs's engine.reset()). */
  dispose() {
    for (const rec of this.live.all()) this.release(rec);
    this.consts.clear();
  }

  // ---------------------------------------------------------------- native

  /**
   * Native tensor id of a kernel input, in the input's own shape: a
   * TensorInfo (uploaded on first use, re-viewed natively if it is a lazy
   * reshape), a raw op output `{id, shape, dtype}`, or an id.
   */
  idOf(t) {
    if (typeof t === 'number') return t;
    const rec = this.uploaded(t);
    if (rec === null) return t.id;
    if (rec.nativeShape !== rec.shape) this.settleShape(rec);
    return rec.id;
  }

  /**
   * `idOf(t)`, after giving `t`'s record a native tensor of its own when other records share
   * its id (a cached constant, the tensor a variable was made from), so that the id stands for
   * `t` alone. Numeric tensors only.
   */
  ownId(t) {
    const id = this.idOf(t);
    if (!this.sharedIds.has(id)) return id;
    const rec = this.uploaded(t);
    const own = this.binding.reshapeTensor(id, rec.shape);
    this.dropId(id);
    rec.id = own;
    return own;
  }

  /**
   * The uploaded record of a TensorInfo, whatever its native shape; null for
   * a raw op output. For kernels that re-view the tensor themselves.
   */
  uploaded(t) {
    const dataId = t.dataId;
    if (dataId === undefined) return null;
    const rec = dataId instanceof TensorData && dataId.refCount > 0 ?
        dataId : this.record(dataId);
    if (rec.id < 0) this.upload(rec);
    return rec;
  }

  /** Gives a lazily reshaped record a native tensor of its own shape. */
  settleShape(rec) {
    const id = this.nativeView(rec.id, rec.nativeShape, rec.shape, rec.dtype);
    this.dropId(rec.id);
    rec.id = id;
    rec.nativeShape = rec.shape;
  }

  /**
   * Whether the ops run now may end up as nodes of a graph: runs are deferred, or a whole
   * call is being recorded (js/graphs/). Kernels then prefer what a graph runs best.
   */
  opsJoinGraphs() {
    return this.deferring || this.ops.recording !== null;
  }

  /**
   * Whether kernels must take ops that any TF has (not the package's own) and that do not
   * depend on sizes (no op chosen for small products): a call recorded for a SavedModel
   * (js/node/saved_model_export.js), whose graph serves other sizes elsewhere.
   */
  portableOps() {
    const recording = this.ops.recording;
    return recording !== null && recording.portable;
  }

  /**
   * A new owner's id for native tensor `id` (of `nativeShape` and `dtype`) under `shape`: the
   * same id when the shapes agree, else a re-view of the same buffer. While ops join graphs the
   * re-view is TF's Reshape op, which joins the run or call (a native re-view would end a
   * deferred run, and a graph has none); otherwise it is a native re-view with no op.
   */
  nativeView(id, nativeShape, shape, dtype) {
    if (sameShape(nativeShape, shape)) return this.shareId(id);
    if (!this.opsJoinGraphs()) return this.binding.reshapeTensor(id, shape);
    return this.execRaw('Reshape', this.reshapeAttrs(dtype), [id, this.vec(shape)], 1)[0].id;
  }

  /** Reshape's attrs for `dtype`, one array per dtype. */
  reshapeAttrs(dtype) {
    return cachedAttrs(this.reshapeAttrsByDtype, dtype, () => [
      typeAttr('T', dtype), typeAttr('Tshape', 'int32'),
    ]);
  }

  upload(rec) {
    const values = rec.values;
    if (values === null) throw new Error('Tensor is disposed.');
    if (rec.shape.length === 0 && rec.dtype !== 'string' && rec.dtype !== 'complex64') {
      // Scalars (the constants layers make on every step) share one upload per value.
      rec.id = this.shareId(this.constant(rec.dtype, [], values[0]));
    } else {
      rec.id = this.createRaw(rec.shape, rec.dtype, values);
    }
    rec.values = null;
  }

  /**
   * A native tensor of `data` (a typed array of `dtype`'s kind, or Uint8Array[] for strings):
   * a fresh id with one owner. The one createTensor call of the package.
   */
  createRaw(shape, dtype, data) {
    const id = this.binding.createTensor(shape, dtype, data);
    if (this.ops.recording !== null) this.ops.recording.created(id, shape, dtype, data);
    return id;
  }

  /** A call being recorded as a graph cannot be one if it does `what` (a graph cannot). */
  notRecordable(what) {
    if (this.ops.recording !== null) this.ops.recording.fail(what);
  }

  /**
   * The values of native tensor `id`: TF's own buffer when it can be shared, so copy what must
   * outlive the id.
   */
  readRaw(id) {
    if (this.ops.recording !== null) this.ops.recording.readId(id);
    return this.binding.tensorDataSync(id);
  }

  /** Counts one more owner of native tensor `id`; returns it. */
  shareId(id) {
    this.sharedIds.set(id, (this.sharedIds.get(id) || 1) + 1);
    return id;
  }

  /**
   * Drops one owner of native tensor `id`, deleting it with the last (an id reserved by a call
   * running ahead of TF: when the call ends).
   */
  dropId(id) {
    const owners = this.sharedIds.get(id);
    if (owners === undefined) {
      const recording = this.ops.recording;
      if (recording === null || !recording.freeReserved(id)) this.binding.deleteTensor(id);
    } else if (owners === 2) {
      this.sharedIds.delete(id);
    } else {
      this.sharedIds.set(id, owners - 1);
    }
  }

  /**
   * `x` (a TensorInfo) under another shape of the same size, as a new record:
   * no native call; the native tensor is re-viewed only if an op needs it.
   */
  reshapeLazily(x, shape) {
    const rec = this.uploaded(x);
    return this.wrapAs({id: this.shareId(rec.id), shape: rec.nativeShape, dtype: rec.dtype},
                       shape);
  }

  /**
   * Runs a TF op. `inputIds` are native ids. Returns the raw outputs
   * `[{id, shape, dtype}]`; outputs of a dtype tfjs lacks (int64, uint8, ...)
   * are cast to int32 / float32 / complex64 here.
   */
  exec(opName, attrs, inputIds, numOutputs) {
    const outs = this.execRaw(opName, attrs, inputIds, numOutputs);
    for (let i = 0; i < outs.length; i++) {
      const to = RESULT_CAST[outs[i].dtype];
      if (to !== undefined) outs[i] = this.castRaw(outs[i], to);
    }
    return outs;
  }

  /**
   * Runs a TF op and returns its outputs as they are. The one call of the
   * binding's executeOp. TF's errors keep their code (`e.code`) and name the
   * op in `e.op`; the message is TF's, as tfjs's own kernels word it.
   */
  execRaw(opName, attrs, inputIds, numOutputs) {
    if (this.openDeviceScopes !== 0) this.followDeviceScope();
    try {
      return this.ops.run(opName, attrs, inputIds, numOutputs);
    } catch (e) {
      throw tfError(e, opName);
    }
  }

  castRaw(out, to) {
    try {
      return this.execRaw('Cast', this.castAttrs(out.dtype, to), [out.id], 1)[0];
    } finally {
      this.dropId(out.id);
    }
  }

  /** Cast's attrs from `from` to `to`, one array per pair (so its prepared op is found at once). */
  castAttrs(from, to) {
    return cachedAttrs(this.castAttrsByPair, from + '>' + to, () => [
      typeAttr('SrcT', from), typeAttr('DstT', to), {name: 'Truncate', type: 'bool', value: false},
    ]);
  }

  /** Registers a raw output as a tfjs tensor's data; returns its TensorInfo. */
  wrap(out) {
    const rec = new TensorData(null, out.shape, out.dtype, out.id, 1);
    this.live.add(rec);
    return rec;
  }

  /** `wrap` under another shape of the same size, re-viewed natively only when an op needs it. */
  wrapAs(out, shape) {
    const rec = this.wrap(out);
    rec.shape = shape;
    return rec;
  }

  /** Frees a raw output (or id) that is not returned to tfjs. */
  free(out) {
    if (out == null) return;
    this.dropId(typeof out === 'number' ? out : out.id);
  }

  // ------------------------------------------------- helpers for kernels

  /**
   * Runs an op on inputs (TensorInfos, raw outputs or ids) and returns raw
   * outputs. `attrs` is the binding's `[{name, type, value}]` list.
   */
  run(opName, attrs, inputs, numOutputs = 1) {
    const ids = new Array(inputs.length);
    for (let i = 0; i < inputs.length; i++) ids[i] = this.idOf(inputs[i]);
    return this.exec(opName, attrs, ids, numOutputs);
  }

  /** `run` for one output. */
  run1(opName, attrs, inputs) {
    return this.run(opName, attrs, inputs, 1)[0];
  }

  /** `run` for one output, registered as a tfjs tensor. */
  op(opName, attrs, inputs) {
    return this.wrap(this.run(opName, attrs, inputs, 1)[0]);
  }

  /** Cached constant tensor id of `values` (a number or flat array). */
  constant(dtype, shape, values) {
    if (dtype === 'float32' && shape.length === 0 && typeof values === 'number' &&
        !Object.is(values, -0)) {
      // float32 scalars, most constants, are keyed by the number itself (no key string to
      // build); the other keys are strings, so they cannot collide.
      return this.consts.get(values, () => this.createConstant(dtype, shape, values));
    }
    const key = dtype + '|' + shape.join(',') + '|' +
        (typeof values === 'number' ? (Object.is(values, -0) ? '-0' : values) :
             typeof values === 'string' ? values : values.join(','));
    return this.consts.get(key, () => this.createConstant(dtype, shape, values));
  }

  createConstant(dtype, shape, values) {
    const size = sizeOf(shape);
    if (dtype === 'string') {
      const arr = [];
      for (let i = 0; i < size; i++) {
        const v = typeof values === 'string' ? values : values[i];
        arr.push(typeof v === 'string' ? Buffer.from(v, 'utf8') : v);
      }
      return this.createRaw(shape, dtype, arr);
    }
    const n = dtype === 'complex64' ? 2 * size : size;
    const arr = this.binding.alloc(dtype, size);
    const big = arr instanceof BigInt64Array;
    for (let i = 0; i < n; i++) {
      let v = typeof values === 'number' ? values : values[i];
      if (dtype === 'complex64' && typeof values === 'number') v = i % 2 ? 0 : values;
      arr[i] = big ? BigInt(v) : (dtype === 'bool' ? (v ? 1 : 0) : v);
    }
    return this.createRaw(shape, dtype, arr);
  }

  /** Cached scalar constant. */
  scalar(value, dtype) {
    return this.constant(dtype, [], value);
  }

  /** Cached int32 vector constant. */
  vec(values, dtype = 'int32') {
    return this.constant(dtype, [values.length], values);
  }

  /**
   * Raw cast of any input to `dtype`, which may be one tfjs lacks (int64,
   * float64): a fresh tensor the caller frees.
   */
  cast(t, dtype) {
    return this.execRaw('Cast', this.castAttrs(t.dtype, dtype), [this.idOf(t)], 1)[0];
  }

}

function sameShape(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

module.exports = {TensorFlowBackend, TensorData, typeAttr, cachedAttrs, sameShape};
