/* Types of the native binding's arguments and results (prepended to binding.d.ts by napi build). */

/** The dtypes a tensor can have; tfjs's five plus those TF ops may return. */
export type DType =
  | 'float32' | 'int32' | 'bool' | 'complex64' | 'string'
  | 'uint8' | 'int64' | 'float64' | 'int8' | 'int16' | 'uint16' | 'uint32' | 'uint64'
  | 'float16' | 'bfloat16' | 'complex128' | 'resource' | 'variant'

/** Dtypes whose elements live in a typed array (so `alloc` can make them). */
export type NumericDType = Exclude<DType, 'string' | 'resource' | 'variant'>

/*
 * `TypedArray` (declared by napi below) holds each dtype: Float32Array (float32; complex64 as
 * interleaved re, im), Int32Array, Uint8Array (bool, uint8), BigInt64Array (int64), Float64Array,
 * Int8Array, Int16Array, Uint16Array (also float16/bfloat16 bits), Uint32Array, BigUint64Array.
 */

/** An op attribute. An array `value` sets a list attr; a `shape` is dims (-1 unknown) or null (unknown rank). */
export interface OpAttr {
  name: string
  /** A name, or tfjs-node's TF_ATTR_* number (0 string … 5 shape). */
  type: 'string' | 'int' | 'float' | 'bool' | 'type' | 'shape' | 0 | 1 | 2 | 3 | 4 | 5
  value: string | number | boolean | DType | number[] | null | Array<string | number | boolean | DType | number[] | null>
}

/** A tensor an op produced: its id (for later ops, reads and deleteTensor), shape and dtype. */
export interface TensorInfo {
  id: number
  shape: number[]
  dtype: DType
}

/**
 * The linked TensorFlow version, as tfjs-node's binding names it (client libraries read
 * `tf.backend().binding.TF_Version` to tell that tfjs-node is present). Set by the loader
 * (js/native_loader_core.js), so present once `require('tfjs-node-rs')` has run.
 */
export declare const TF_Version: string

export type TypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array

/**
 * Which binding artifact the generated loader actually loaded: `'native'` for
 * a native addon, otherwise the `platformArchABI` of the WASI flavor. Every
 * flavor napi-rs can build is listed, because `NAPI_RS_NATIVE_LIBRARY_PATH`
 * can point the loader at a WASI artifact this package does not build itself.
 */
export declare const __napiBindingTarget: 'native' | 'wasm32-wasi' | 'wasm32-wasip1'

/** TF's gRPC server running in this process, as a task of a cluster. */
export declare class TfServer {
  /** The server's `grpc://host:port` address. */
  get target(): string
  /** Asks TF to stop serving; throws TF's error where it cannot (a started gRPC server). */
  stop(): void
}

/**
 * A zero-filled typed array of `length` elements of `dtype` on 64-byte-aligned memory: data
 * written into it becomes a tensor without a copy.
 */
export declare function alloc(dtype: NumericDType, length: number): TypedArray

/**
 * Starts queueing the ops of a call whose first run is recorded as executor jobs while its JS
 * goes on (`crate::ops::pipeline`); false when ops run at once instead (no executor, a device
 * scope).
 */
export declare function beginPipelinedCall(): boolean

/**
 * Copies each tensor of `ids` that lives on another task's device, other than the devices
 * `keepOn`, to this process, in place (the ids stay); returns how many were copied. A tensor
 * that cannot be copied is dropped, and the first such error thrown once the others are here.
 */
export declare function bringTensorsHere(ids: Array<number>, keepOn: Array<string>): number

/**
 * An op the call ran: its prepared op (`prepareOp`), its inputs, and the shapes its outputs
 * had (without them, no chain of element-wise ops is fused: see `graphs::fusions`).
 */
export interface CallOp {
  op: number
  inputs: Array<CallRef>
  shapes?: Array<Array<number>>
}

/**
 * Where a recorded op's input, or a call's output, comes from: `{feed}` (the call's feeds,
 * the JS-fed ones first, then the fixed ones) or `{node, output}` (an earlier op's output).
 */
export interface CallRef {
  feed?: number
  node?: number
  output?: number
}

/**
 * Whether call graph `call` may compute a call whose JS ran ahead of TF (its ops recorded, not
 * run: `js/graphs/recording.js`): the shape of every node output that is used is known from
 * the feeds' shapes, so the JS saw the shapes the graph computes.
 */
export declare function callRunsAhead(call: number): boolean

/**
 * Compiles a recorded call into one graph; returns its id for `runCall`. `fedIds` are tensors
 * of the recorded call that each call feeds anew (their dtypes type the feeds, their dims
 * too unless `fedDims` gives others: -1 for a dim whose size calls may vary); `fixedIds`
 * are tensors every call uses as they are now (the graph keeps them). The first `returned`
 * fetches (all when absent) are the call's outputs, the rest values it assigns to variables:
 * a call compiled in a scope of another task's device leaves those there.
 */
export declare function compileCall(ops: Array<CallOp>, fedIds: Array<number>, fixedIds: Array<number>, fetches: Array<CallRef>, fedDims?: Array<Array<number>> | undefined | null, returned?: number | undefined | null): number

/**
 * Sets the `ConfigProto` (built by js/configure.js) and thread counts every context and
 * SavedModel session of the process is made with, before the first context; afterwards only
 * the configuration in force is accepted.
 */
export declare function configureRuntime(configProto: Uint8Array, intraOpThreads: number, interOpThreads: number): void

/**
 * Makes this env's context a client of the cluster in `serverDef`, which names this client as
 * its own task, `localTask` (`/job:client/replica:0/task:0`). Work in flight is finished
 * first; tensors on other tasks' devices are dropped (their ids stay, as tensors not computed).
 * See `ops::Runtime::connect_to_cluster`.
 */
export declare function connectToCluster(serverDef: Uint8Array, localTask: string, timeoutMs: number): void

/**
 * Makes a tensor from `data` (a typed array matching `dtype`, or an array of `Uint8Array` for
 * strings) and returns its id.
 */
export declare function createTensor(shape: number[], dtype: DType, data: TypedArray | Uint8Array[]): number

/** Drops one reference to the session; the last one closes it. */
export declare function deleteSavedModel(id: unknown): void

export declare function deleteTensor(id: number): void

/** A device the env's context can place ops on. */
export interface DeviceInfo {
  /** The full name, e.g. `/job:worker/replica:0/task:1/device:CPU:0`. */
  name: string
  /** `CPU`, `GPU`, ... */
  deviceType: string
}

/** Frees call graph `call`; false when it did not exist. */
export declare function dropCall(call: number): boolean

/**
 * Deletes the tensor so that its buffer is freed on a native thread other than the JS thread,
 * as TF's own threads may do. Exists to exercise the release queue; see `stats().pendingReleases`.
 */
export declare function dropTensorOnNativeThread(id: number): void

/** Dtype names in the order `runPreparedOp` reports dtype indices. */
export declare function dtypeNames(): Array<string>

/**
 * Starts this task's server in the env's context for collective ops across the cluster in
 * `serverDef` (every task calls it with its own task index).
 */
export declare function enableCollectiveOps(serverDef: Uint8Array): void

/**
 * Stops queueing the call's ops and waits for them; returns whether one failed (the call then
 * runs again eagerly, js/graphs/call_graphs.js).
 */
export declare function endPipelinedCall(): boolean

/** `executeOp(name, attrs, inputIds, numOutputs)` → `[{id, shape, dtype}]`. */
export declare function executeOp(name: string, attrs: OpAttr[] | null | undefined, inputIds: number[], numOutputs: number): TensorInfo[]

/**
 * A recorded call as the graph of a SavedModel (`crate::graphs::export`): refs count the
 * `inputs`, then the `variables`, then the `constantIds` (tensors the graph holds).
 */
export declare function exportCall(ops: Array<CallOp>, inputs: Array<ExportInput>, variables: Array<ExportVariable>, constantIds: Array<number>, outputs: Array<ExportOutput>): ExportedCall

export interface ExportedCall {
  graphDef: Uint8Array
  variables: Array<ExportedVariable>
  /** Absent when the call reads no variable. */
  saver?: ExportedSaver
}

/** The saver's nodes, as a `SaverDef` names them. */
export interface ExportedSaver {
  filenameTensorName: string
  saveTensorName: string
  restoreOpName: string
}

/** The nodes of an exported variable, as its `VariableDef` names them. */
export interface ExportedVariable {
  variableName: string
  initializerName: string
  snapshotName: string
  initialValueName: string
}

/**
 * A signature input of an exported call: its placeholder's name, the tensor of the recorded
 * call it stands for (its dtype types the placeholder), and its dims (-1: any size).
 */
export interface ExportInput {
  name: string
  id: number
  dims: Array<number>
}

/** An output of an exported call: the name of its `Identity` node and what it is. */
export interface ExportOutput {
  name: string
  source: CallRef
}

/**
 * A variable of an exported call: its name in the graph and the checkpoint, and a tensor of
 * its dtype and dims.
 */
export interface ExportVariable {
  name: string
  id: number
}

/**
 * Fills reserved ids with computed (or pending) tensors: `io` holds `pairs` pairs of ids,
 * `reserved, source`; each source id is gone afterwards.
 */
export declare function fillTensors(io: Float64Array, pairs: number): void

/** Distinct SavedModel sessions loaded in this env. */
export declare function getNumOfSavedModels(): number

/** Whether this env defers runs of ops (`TFJS_NODE_RS_DEFER` unset or not `0`; see `trace`). */
export declare function isDeferring(): boolean

export declare function isUsingGpuDevice(): boolean

export declare function listDevices(): Array<DeviceInfo>

/**
 * Loads the op library at `path` into TF (`TF_LoadLibrary`: its ops and kernels become
 * available to every context and graph) and returns the names of the ops it defines. TF's
 * error names what failed: the file, a missing symbol, an op registered twice.
 */
export declare function loadOpLibrary(path: string): Array<string>

/**
 * `loadSavedModel(exportDir, tags, sessionConfig?, ownSession?)` → a session id.
 * `sessionConfig`: the session's own `ConfigProto` fields (js/configure.js), over the
 * process's. Loading the same directory with the same tags and options again shares the
 * session (one more reference), unless either load asks for a session of its own.
 */
export declare function loadSavedModel(exportDir: string, tags: string[], sessionConfig?: Uint8Array, ownSession?: boolean): number

/**
 * Elements per op, on average, up to which a call graph's first run is queued on the executor
 * ahead of need (`warmUpCall`); the bound deferred runs use too (`ops::deferred`).
 */
export declare const MAX_SET_UP_ELEMENTS_PER_OP: number

/** What the runtime runs with (`tf.node.runtimeInfo()` adds the devices and what JS knows). */
export interface NativeRuntimeInfo {
  /** The file libtensorflow's C API was loaded from. */
  libraryPath?: string
  /**
   * Threads of TF's intra-op pool and of TF's inter-op pools, as configured (0: one per
   * core).
   */
  intraOpThreads: number
  interOpThreads: number
  /** Cores the process may use. */
  cores: number
}

/** An input or output of an op. */
export interface OpArgDef {
  name: string
  /** A fixed dtype; otherwise `typeAttr` or `typeListAttr` names the attr that decides it. */
  dtype?: string
  typeAttr?: string
  /** The int attr holding the length of a list input of one dtype. */
  numberAttr?: string
  /** The list(type) attr holding one dtype per list element. */
  typeListAttr?: string
}

export interface OpAttrDef {
  name: string
  /** TF's spelling: `int`, `list(type)`, `string`, `shape`, ... */
  kind: string
  /** Attrs without a default must be given: the binding refuses a call that leaves one out. */
  hasDefault: boolean
  /** The least value of an int, the least length of a list. */
  minimum?: number
  /** Allowed strings, or allowed dtype names. */
  allowedValues?: Array<string>
}

/** The definition of op `name` (a `NOT_FOUND` error for an unknown op). */
export declare function opDef(name: string): OpDefinition

export interface OpDefinition {
  name: string
  inputs: Array<OpArgDef>
  outputs: Array<OpArgDef>
  attrs: Array<OpAttrDef>
  isStateful: boolean
}

/** Names of every op registered with TF (its own and this package's). */
export declare function opNames(): Array<string>

/** Pauses deferring (or resumes it): ops run at once while paused (see `ops::deferred`). */
export declare function pauseDeferring(paused: boolean): void

/**
 * Loads the shared library at `path` (`RTLD_NOW | RTLD_LOCAL`, as TF opens its own) and keeps
 * it loaded for the life of the process.
 */
export declare function preloadLibrary(path: string): void

/**
 * Whether prepared op `prepared` can be a graph node and computes the same outputs from the
 * same inputs every time (no random numbers): values a recorded call may read back.
 */
export declare function preparedOpIsDeterministic(prepared: number): boolean

/** Reads and checks `attrs` for op `name` once; returns a handle for `runPreparedOp`. */
export declare function prepareOp(name: string, attrs: OpAttr[] | null | undefined): number

/** What `stopProfile` returns. */
export interface Profile {
  spans: Array<ProfileSpan>
  /** The OS id of the thread that stopped the profile (the JS thread). */
  jsTid: number
}

/** Now, in microseconds since the Unix epoch: the profile's clock. */
export declare function profileClockUs(): number

/** A span of the profile; times in microseconds since the Unix epoch. */
export interface ProfileSpan {
  /** `eager op`, `session run`, `graph node`, `executor job` or `wait`. */
  kind: string
  name: string
  /** The op type, for eager ops and graph nodes. */
  op: string
  startUs: number
  durationUs: number
  thread: string
  tid: number
}

/**
 * Starts letting go of libtensorflow's read-only pages on another thread while the process
 * exits (src/library_pages.rs); nothing outside the process's main thread. Called from the
 * `'exit'` listener that stops background work.
 */
export declare function releaseLibraryPages(): void

/**
 * `count` consecutive tensor ids with no tensor yet, for the outputs of ops a call runs ahead
 * of TF; returns the first. Each is filled (`fillTensors`) or deleted (`deleteTensor`); until
 * then, using one is an error.
 */
export declare function reserveTensors(count: number): number

/**
 * A new tensor id for the tensor's buffer under another shape, without running an op or
 * copying: what a tfjs reshape is. Numeric dtypes only (strings take TF's Reshape op).
 */
export declare function reshapeTensor(id: number, shape: number[]): number

/**
 * Runs call graph `call` on the `numFed` tensor ids in `io`; on return `io` holds its outputs
 * as `runPreparedOp` writes them. Returns the number of outputs.
 */
export declare function runCall(call: number, io: Float64Array, numFed: number): number

/**
 * Runs a prepared op. `io` holds the `numInputs` input ids on entry; on return it holds, for each
 * output, `id, dtype index (into dtypeNames()), rank, dims...`. Returns the number of outputs.
 */
export declare function runPreparedOp(prepared: number, io: Float64Array, numInputs: number, numOutputs: number): number

/**
 * `runSavedModel(id, inputIds, inputNames, outputNames)` → `[{id, shape, dtype}]`. Names are
 * graph tensors (see `SessionRun`).
 */
export declare function runSavedModel(id: unknown, inputIds: unknown, inputNames: unknown, outputNames: unknown): unknown

/**
 * `runSavedModel` as an executor job (`crate::executor`), on inputs computed or still being
 * computed: returns the job's number for `whenJobDone` and `takeJobOutputs`. Inputs and names
 * are checked here; TF's errors of the run come from `takeJobOutputs`.
 */
export declare function runSavedModelInBackground(id: unknown, inputIds: unknown, inputNames: unknown, outputNames: unknown): number

export declare function runtimeInfo(): NativeRuntimeInfo

/**
 * Places every eager op from now on on `device` (`null`: TF places them). The deferred run in
 * progress is finished first, so its ops run where they were issued.
 */
export declare function setDeviceScope(device?: string | undefined | null): void

/** Starts recording what TF runs; an error while a profile is being taken. */
export declare function startProfile(): void

/**
 * Creates this env's runtime now rather than at its first call: its TF context, and the
 * kernel set-up that `tf::warm_up` does on the executor thread meanwhile. js/index.js calls it
 * once the addon is loaded, before tfjs's JS or, where a native thread loads the addon
 * (js/native_loader_core.js's `startLoading`), after it.
 */
export declare function startRuntime(): void

/** Starts a server for `serverDef` (a serialized `tensorflow.ServerDef`). */
export declare function startServer(serverDef: Uint8Array): TfServer

export declare function stats(): Stats

/** Counters of the binding's memory traffic in this env. */
export interface Stats {
  /** Tensors JS holds ids for. */
  liveTensors: number
  /** Bytes of element data in those tensors (strings not counted). */
  liveBytes: number
  /** `createTensor` calls whose memory TF shares with JS. */
  sharedCreates: number
  /** `createTensor` calls that copied (misaligned or empty data, strings). */
  copiedCreates: number
  /** `tensorDataSync` calls that returned a view of TF's own buffer. */
  sharedReads: number
  /**
   * `tensorDataSync` calls that copied (strings, small reads, shared buffers, past the
   * views' budget).
   */
  copiedReads: number
  /** JS-memory releases queued by TF threads, not yet done on the JS thread. */
  pendingReleases: number
  /** ArrayBuffers over native memory (from `alloc` and reads) not yet collected, process-wide. */
  externalBuffers: number
  /**
   * Bytes of TF buffers that read views hold now, process-wide: never more than
   * `viewBudgetBytes` (a read that would pass it is a copy).
   */
  viewBytes: number
  /** The most bytes read views may hold (`sharing::ReadViews`). */
  viewBudgetBytes: number
  /**
   * Blocks of this many bytes or more get a mapping of their own from glibc and go back to
   * the system when freed (`crate::allocator`); 0 where this package left the allocator as
   * it was (another libc, or the user's own `MALLOC_MMAP_THRESHOLD_`).
   */
  mmapThresholdBytes: number
  /** Op calls whose running was deferred to the end of their run (see `ops::deferred`). */
  deferredOps: number
  /** Runs of deferred ops turned into graph nodes. */
  compiledRuns: number
  /** Runs of deferred ops executed as one session run of those nodes. */
  graphRuns: number
  /** Whole calls compiled into graphs (`compileCall`) and alive. */
  callGraphs: number
  /**
   * Nodes of the call graphs compiled so far that run several recorded ops as one
   * (`graphs::fusions`).
   */
  fusedNodes: number
  /** Graph runs queued on the executor thread (`crate::executor`). */
  backgroundRuns: number
  /**
   * Ops of models' first calls queued on the executor thread while the call's JS went on
   * (`crate::ops::pipeline`).
   */
  pipelinedOps: number
  /**
   * One-time set-ups of TF queued on the executor thread as the runtime started
   * (`crate::tf::warm_up`); each is run while the program has called no op, or dropped.
   */
  startSetUpsQueued: number
  startSetUpsRun: number
  startSetUpsDropped: number
}

/**
 * Finishes the job in progress and stops the executor thread: `process.exit()` runs no env
 * cleanup hooks before the process's own destructors, which would tear TensorFlow down under a
 * job still running. Called from a `process` `'exit'` listener (js/backend/tensorflow_backend.js).
 */
export declare function stopBackgroundWork(): void

/** Stops recording; returns the spans recorded since `startProfile`. */
export declare function stopProfile(): Profile

/**
 * The outputs of job `job` as `[{id, shape, dtype}]` (waiting for it when it is not done),
 * or TF's error of its run; the number is forgotten either way.
 */
export declare function takeJobOutputs(job: number): TensorInfo[]

/**
 * The tensor's values: a typed array (a view of TF's buffer when no other tensor can see it,
 * else a copy; see `sharing::Sharing::read_typed_array`), or `Uint8Array[]` for strings. `aliased`: the
 * caller knows other owners of `id` (a read of it is then always a copy).
 */
export declare function tensorDataSync(id: number, aliased?: boolean): TypedArray | Uint8Array[]

/** The device that ran the op producing tensor `id` (`backing`: the device holding its memory). */
export declare function tensorDevice(id: number, backing: boolean): string

/** The version of the TensorFlow C library the addon runs on. */
export declare function tfVersion(): string

/**
 * Sets call graph `call` up before it is needed: its first run, fed the `numFed` tensor ids
 * in `io`, is queued on the executor and its outputs dropped (a session's first run is mostly
 * TF setting it up: its graph passes and kernels). A later run waits for it. Returns whether
 * it was queued (not without an executor).
 */
export declare function warmUpCall(call: number, io: Float64Array, numFed: number): boolean

/**
 * A promise that resolves (never rejects) once job `job` (a number from
 * `runSavedModelInBackground`) is done.
 */
export declare function whenJobDone(job: number): Promise<void>

/**
 * `null` when tensor `id` holds its values (or fails at once on a read); else a promise that
 * resolves once it does, while the work computing it runs on the executor thread (a deferred
 * run it comes from is started there). A read after that does not wait.
 */
export declare function whenReady(id: number): Promise<void> | null
