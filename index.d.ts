// Types of `require('tfjs-node-rs')`: the whole @tensorflow/tfjs API, with the `tensorflow`
// backend registered and current, plus the `tf.node` namespace and Node-only `tf.io` handlers.

import {
  InferenceModel, MetaGraph, ModelPredictConfig, ModelTensorInfo, NamedTensorMap,
  Scalar, Tensor, Tensor3D, Tensor4D, Callback, io, KernelBackend, LayersModel, GraphModel,
} from '@tensorflow/tfjs';
import * as binding from './binding';

export * from '@tensorflow/tfjs';

/**
 * tfjs's versions, the tfjs-node API this package matches under `'tfjs-node'`, and this
 * package's own under `'tfjs-node-rs'`.
 */
export declare const version: {
  'tfjs-core': string;
  'tfjs-backend-cpu': string;
  'tfjs-backend-webgl': string;
  'tfjs-data': string;
  'tfjs-layers': string;
  'tfjs-converter': string;
  tfjs: string;
  'tfjs-node': string;
  'tfjs-node-rs': string;
};

/**
 * The `tensorflow` backend (`tf.backend()` while it is current): a tfjs KernelBackend whose
 * kernels run as TensorFlow eager ops.
 */
export interface TensorFlowBackend extends KernelBackend {
  /** The native binding it runs on (see binding.d.ts). */
  readonly binding: typeof binding;
  readonly isUsingGpuDevice: boolean;
  /**
   * Native tensors alive in this thread's TF context for tfjs tensors (for leak checks, as in
   * tfjs-node); the backend's bounded cache of small constants is not counted.
   */
  getNumOfTFTensors(): number;
  /** Distinct SavedModel sessions loaded. */
  getNumOfSavedModels(): number;
}

export declare namespace node {
  // ------------------------------------------------------------------ The runtime

  /** TF's thread pools and GPU memory (README: "Runtime options"). */
  export interface RuntimeOptions {
    /** Threads of TF's intra-op pool (one op's work); 0 or absent: one per core. */
    intraOpThreads?: number;
    /** Threads of TF's inter-op pools (independent ops at once); 0 or absent: one per core. */
    interOpThreads?: number;
    gpu?: {
      /** Take GPU memory as needed instead of all of it at the start. */
      allowGrowth?: boolean;
      /** At most this much GPU memory per visible GPU. */
      memoryLimitMB?: number;
      /** The GPUs TF may use, by index (CUDA_VISIBLE_DEVICES order). */
      visibleDevices?: number[];
    };
  }

  /**
   * Sets the runtime options; they take effect when the runtime starts, that is when
   * tfjs-node-rs is required, so call it from `require('tfjs-node-rs/configure')` first. Once
   * started, only the options in force are accepted (others: an Error with code
   * `TFJS_NODE_RS_STARTED`). The same options come from `TFJS_NODE_RS_*` variables.
   */
  export function configure(options: RuntimeOptions): void;

  /** What the runtime runs with. */
  export function runtimeInfo(): {
    tfVersion: string;
    /** The file libtensorflow's C API was loaded from. */
    libraryPath: string|null;
    cores: number;
    intraOpThreads: number;
    interOpThreads: number;
    oneDNN: boolean;
    devices: Array<{name: string, deviceType: string}>;
    gpu: {allowGrowth: boolean, memoryLimitMB: number, visibleDevices: number[],
          /** Whether a GPU device exists to use them. */
          used: boolean};
    /** V8's code cache for the modules `require('tfjs-node-rs')` loaded, turned on by
     * `TFJS_NODE_RS_CODE_CACHE`: its folder (null: off, the default, or not writable) and how
     * many modules compiled from it, had none, or had one V8 rejected (those two are written
     * at exit). */
    codeCache: {directory: string|null, hits: number, misses: number, rejected: number};
  };

  /**
   * Loads a library of custom TF ops and kernels (`TF_LoadLibrary`), for SavedModels that need
   * them; returns the names of the ops it defines.
   */
  export function loadOpLibrary(path: string): string[];

  /** Where the time of a `profile` went. */
  export interface ProfileSummary {
    wallMs: number;
    /** The JS thread's wall time: in eager ops, in graph (session) runs, waiting for executor
     * jobs synchronously, the event loop idle (awaiting work done elsewhere), and the rest
     * (tfjs's and the program's JS). */
    jsThread: {eagerMs: number, graphMs: number, waitMs: number, idleMs: number, jsMs: number};
    /** Time the executor thread ran jobs, alongside the JS thread. */
    executorMs: number;
    graphNodes: number;
    eagerOps: number;
    /** The ops that took longest, eagerly or as graph nodes. */
    topOps: Array<{op: string, where: 'eager'|'graph', count: number, totalMs: number}>;
  }

  /**
   * Runs `fn` while recording what TF runs (eager ops, graph runs node by node, executor jobs,
   * waits). With `logdir`, writes a Chrome trace (`<name>.trace.json`, for Perfetto or
   * chrome://tracing) and the summary as TensorBoard run `<logdir>/<name>` (scalars, and a
   * text table of the top ops).
   */
  export function profile<T>(fn: () => T | Promise<T>, options?: {logdir?: string, name?: string}):
      Promise<{result: T, summary: ProfileSummary, traceFile: string|null,
               tensorboardDir: string|null}>;

  // ------------------------------------------------------------------ Whole calls as graphs

  /**
   * `fn` as one TF graph per key of its arguments (Python's `tf.function` for tfjs): its
   * first calls with a key run eagerly and are recorded, later ones run the recorded ops as
   * one graph. Tensors key by dtype and shape, other arguments by value; `fn` runs as
   * `tf.tidy(fn)`, and JS values it reads are fixed at the recording.
   */
  function function_<F extends (...args: any[]) => any>(fn: F): F;
  export {function_ as function};

  /** Counters of whole-call graphs in this process (README: "Whole calls as graphs"). */
  export function callGraphStats(): {
    /** Calls compiled into graphs. */
    compiled: number;
    /** Calls run as one graph. */
    replays: number;
    /** Calls recorded while running eagerly. */
    recordings: number;
    /** Keys left eager (their calls could not be one graph). */
    eagerKeys: number;
    /** Why the last recording could not be a graph, with its call site, or null. */
    lastFailure: string | null;
    /** Call graphs alive now. */
    alive: number;
    /** Graphs compiled for inputs of any size in the dims that varied between calls. */
    genericCompiled: number;
    /** Calls run as such a graph. */
    genericReplays: number;
    /** Calls such a graph failed on, then run eagerly (their result or error is eager's). */
    genericFallbacks: number;
  };

  // ------------------------------------------------------------------ Beyond one machine

  /** A cluster: job name (`[a-z][a-z0-9_]*`) -> its tasks' `'host:port'` addresses. */
  export type ClusterSpec = {[job: string]: string[]};

  /** TF's gRPC server running in this process (`startServer`). */
  export interface ClusterServer {
    /** `grpc://host:port`. */
    readonly target: string;
    readonly jobName: string;
    readonly taskIndex: number;
    /**
     * TF 2.21 cannot stop a started gRPC server: this rejects with TF's UNIMPLEMENTED error and
     * the server serves until the process exits.
     */
    stop(): Promise<void>;
  }

  /**
   * Starts TF's gRPC server in this process as task `taskIndex` (default 0) of job `jobName`
   * (default 'worker') of `cluster`. A port already taken rejects with TF's error.
   */
  export function startServer(spec: {cluster: ClusterSpec, jobName?: string, taskIndex?: number}):
      Promise<ClusterServer>;

  /**
   * Makes this process a client of `cluster` (as task 0 of its own job `jobName`, default
   * 'client', on `address`, default 127.0.0.1 and a free port); rejects with TF's error when a
   * task does not answer within `timeoutMs` (default 10000). Connecting again replaces the
   * cluster.
   */
  export function connectToCluster(cluster: ClusterSpec,
                                   options?: {timeoutMs?: number, jobName?: string,
                                              address?: string}): Promise<void>;

  /** The devices ops can be placed on, local and (once connected) remote. */
  export function listDevices(): Array<{name: string, deviceType: string}>;

  /**
   * Runs `fn` with every op it issues placed on `device` (a full name as `listDevices` gives
   * it). When `fn` returns a Promise (an async function: `model.fit`, `trainOnBatch`,
   * `evaluate`), the scope holds for its work after each `await` too, until that Promise
   * settles, and `withDevice` returns a Promise of its result; other async work meanwhile runs
   * where its own scope says. Single ops in the scope run one by one (no deferred runs); a
   * whole call (a predict, a training step, `tf.node.function`) runs as one TF function call on
   * `device`.
   */
  export function withDevice<T>(device: string,
                                fn: () => T): T extends PromiseLike<infer R> ? Promise<R> : T;

  /**
   * The device that ran the op making `tensor`, or with `{backing: true}` the device holding
   * its memory.
   */
  export function deviceOf(tensor: Tensor, options?: {backing?: boolean}): string;

  /** Data-parallel training on TF's collective ops. */
  export namespace distributed {
    interface ClusterTask {
      cluster: ClusterSpec;
      /** The workers' job (default 'worker'). */
      jobName?: string;
      taskIndex: number;
      /** How long to wait for the other workers (joining, each all-reduce); default 30000. */
      timeoutMs?: number;
    }

    /**
     * Trains `model` as task `taskIndex` of `cluster`'s workers, each calling it with the same
     * model and data: each trains on its shard of every global batch of `batchSize` (a multiple
     * of the worker count) and the gradients are averaged across the workers before each step,
     * so the weights match one-process training on the global batches. No `shuffle`.
     */
    function fit(model: import('@tensorflow/tfjs').LayersModel,
                 x: Tensor|Tensor[], y: Tensor|Tensor[],
                 args: ClusterTask & import('@tensorflow/tfjs').ModelFitArgs):
        Promise<import('@tensorflow/tfjs').History>;

    /** Makes this process a worker of `cluster` for collective ops (done by `fit`). */
    function join(task: ClusterTask): Promise<unknown>;

    /** `x` reduced across the workers: `'Add'` then `'Div'` (mean) or `'Id'` (sum). */
    function allReduce<T extends Tensor>(x: T, merge: 'Add'|'Min'|'Max'|'Mul',
                                         final: 'Id'|'Div'): T;
  }

  // ------------------------------------------------------------------ SavedModel

  /**
   * Tags and signature defs of every meta graph in `<path>/saved_model.pb`. Inputs and outputs
   * carry `name` (graph tensor, `op:index`), `dtype` (the tfjs dtype that feeds / comes out:
   * int64 and uint8 travel as int32), `tfDtype` (`'DT_FLOAT'`...) and `shape` (-1 for unknown
   * dims, undefined for unknown rank). `__saved_model_init_op` is left out.
   */
  export function getMetaGraphsFromSavedModel(path: string): Promise<MetaGraph[]>;

  /**
   * Loads one signature of the meta graph tagged exactly `tags` into a TF session. Models of
   * the same directory, tags and options share one session. `options.interOpThreads` gives
   * the session an inter-op pool of its own of that size (the intra-op pool is the process's:
   * `configure`).
   */
  export function loadSavedModel(path: string, tags?: string[], signature?: string,
                                 options?: {interOpThreads?: number}): Promise<TFSavedModel>;

  /** Distinct SavedModel sessions loaded (models that share a session count once). */
  export function getNumOfSavedModels(): number;

  /** Options of `saveSavedModel`. */
  export interface SaveSavedModelOptions {
    /**
     * Signature key -> the output names it returns (default: every output); default
     * `{serving_default: {}}`. Inputs are the model's, keyed by their names.
     */
    signatures?: {[key: string]: {outputs?: string[]}};
    /** The MetaGraph's tags; default `['serve']`. */
    tags?: string[];
    /**
     * A function's arguments (required for a function, ignored for models): a shape each, null
     * for a dim of any size, a dtype (default float32) and a name (default `input_<k>`).
     */
    inputs?: Array<{name?: string; shape: Array<number | null>;
                    dtype?: 'float32' | 'int32' | 'bool'}>;
  }

  /**
   * Writes `model` (or a function of tensors, `tf.node.function`, whose arguments
   * `options.inputs` declares) as a TensorFlow SavedModel in `dir`: `saved_model.pb` (the graph,
   * batch dimension unknown, and its signatures) and `variables/` (the weights, written by TF's
   * SaveV2), which `tf.saved_model.load`, Keras's `TFSMLayer`, TF Serving and `loadSavedModel`
   * read. Also `model.save('savedmodel://dir')`. Rejects, naming the layer, a model whose
   * predict cannot be a graph of any batch size.
   */
  export function saveSavedModel(
      model: LayersModel | GraphModel |
          ((...args: Tensor[]) => Tensor | Tensor[] | {[name: string]: Tensor}),
      dir: string, options?: SaveSavedModelOptions): Promise<io.SaveResult>;

  /**
   * Exact int64 values (tfjs has no int64 dtype): a shape and a BigInt64Array. Feeds int64
   * SavedModel inputs beyond int32, and holds int64 outputs under `{int64: 'bigint'}`.
   */
  export class Int64Tensor {
    readonly values: BigInt64Array;
    readonly shape: number[];
    readonly dtype: 'int64';
    readonly size: number;
    readonly rank: number;
    dataSync(): BigInt64Array;
    data(): Promise<BigInt64Array>;
    dispose(): void;
  }

  /** An Int64Tensor of `values` with `shape` (default `[values.length]`). */
  export function int64Tensor(values: BigInt64Array|Array<bigint|number>, shape?: number[]): Int64Tensor;

  /** A SavedModel input: a tensor, or an Int64Tensor for int64 inputs. */
  export type SavedModelInput = Tensor|Int64Tensor;

  /** predict() / execute() options of a TFSavedModel. */
  export interface SavedModelRunConfig extends ModelPredictConfig {
    /**
     * How int64 outputs come back: 'int32' (default, as tfjs-node) gives int32 tensors and
     * throws when a value does not fit int32; 'bigint' gives Int64Tensor.
     */
    int64?: 'int32'|'bigint';
  }

  export class TFSavedModel implements InferenceModel {
    /** The signature's inputs, in input-key order (names without a trailing `:0`). */
    readonly inputs: ModelTensorInfo[];
    /** The signature's outputs, in output-key order. */
    readonly outputs: ModelTensorInfo[];
    /** Output key -> graph tensor name. */
    readonly outputNodeNames: {[key: string]: string};
    /**
     * Runs the signature. Inputs: a tensor (single-input signatures), an array in input-key
     * order, or a map by input key. Returns a tensor for a tensor input and one output, an
     * array (output-key order) for tensor/array inputs, a map by output key for a map input.
     * Wrong input names or dtypes throw before TF runs; shapes are TensorFlow's to check.
     * With `{int64: 'bigint'}`, int64 outputs are Int64Tensor.
     */
    predict(inputs: Tensor|Tensor[]|NamedTensorMap, config?: ModelPredictConfig):
        Tensor|Tensor[]|NamedTensorMap;
    predict(inputs: SavedModelInput|SavedModelInput[]|{[name: string]: SavedModelInput},
            config: SavedModelRunConfig):
        SavedModelInput|SavedModelInput[]|{[name: string]: SavedModelInput};
    /**
     * predict() with the session run on the binding's executor thread: the JS thread stays
     * free until the outputs exist. Resolves with what predict() returns; TF's errors reject.
     */
    predictAsync(inputs: Tensor|Tensor[]|NamedTensorMap, config?: ModelPredictConfig):
        Promise<Tensor|Tensor[]|NamedTensorMap>;
    predictAsync(inputs: SavedModelInput|SavedModelInput[]|{[name: string]: SavedModelInput},
                 config: SavedModelRunConfig):
        Promise<SavedModelInput|SavedModelInput[]|{[name: string]: SavedModelInput}>;
    /**
     * Runs the graph and fetches `outputs`: signature output keys or graph tensor names
     * (`op:index`). A name gives a tensor, an array gives an array. `config` as for predict().
     */
    execute(inputs: Tensor|Tensor[]|NamedTensorMap, outputs: string): Tensor;
    execute(inputs: Tensor|Tensor[]|NamedTensorMap, outputs: string[]): Tensor[];
    execute(inputs: SavedModelInput|SavedModelInput[]|{[name: string]: SavedModelInput},
            outputs: string|string[], config: SavedModelRunConfig):
        SavedModelInput|SavedModelInput[];
    /** Frees the model; its session closes when no other model shares it. */
    dispose(): void;
  }

  // ------------------------------------------------------------------ images

  export enum ImageType { JPEG = 'jpeg', PNG = 'png', GIF = 'gif', BMP = 'BMP' }

  /** The image type sniffed from the leading bytes; throws for anything else. */
  export function getImageType(content: Uint8Array): ImageType;

  /**
   * Decodes a BMP, GIF, JPEG or PNG into an int32 tensor. GIFs give [frames, h, w, 3], or the
   * first frame as [h, w, 3] with `expandAnimations = false`; others give [h, w, channels].
   * `channels`: 0 = as stored.
   */
  export function decodeImage(content: Uint8Array, channels?: number, dtype?: 'int32',
                       expandAnimations?: boolean): Tensor3D|Tensor4D;

  /**
   * Defaults: channels 0, ratio 1, fancyUpscaling true, tryRecoverTruncated false,
   * acceptableFraction 1, dctMethod '' (TF's fast integer DCT; 'INTEGER_ACCURATE' matches
   * libjpeg's default).
   */
  export function decodeJpeg(contents: Uint8Array, channels?: number, ratio?: number,
                      fancyUpscaling?: boolean, tryRecoverTruncated?: boolean,
                      acceptableFraction?: number, dctMethod?: string): Tensor3D;
  export function decodePng(contents: Uint8Array, channels?: number, dtype?: 'int32'): Tensor3D;
  export function decodeBmp(contents: Uint8Array, channels?: number): Tensor3D;
  export function decodeGif(contents: Uint8Array): Tensor4D;

  /**
   * Encodes [h, w, 1|3] as JPEG. Defaults: format '' (by channels), quality 95, progressive
   * false, optimizeSize false, chromaDownsampling true, densityUnit 'in', xDensity 300,
   * yDensity 300, xmpMetadata ''.
   */
  export function encodeJpeg(image: Tensor3D, format?: ''|'grayscale'|'rgb', quality?: number,
                      progressive?: boolean, optimizeSize?: boolean,
                      chromaDownsampling?: boolean, densityUnit?: 'in'|'cm',
                      xDensity?: number, yDensity?: number, xmpMetadata?: string):
      Promise<Uint8Array>;

  /** Encodes [h, w, 1|2|3|4] as PNG; compression -1..9, default 1. */
  export function encodePng(image: Tensor3D, compression?: number): Promise<Uint8Array>;

  // ------------------------------------------------------------------ TensorBoard

  export class SummaryFileWriter {
    /** Writes a scalar (`simple_value`) for `name` at `step` (an integer). */
    scalar(name: string, value: Scalar|number, step: number, description?: string): void;
    /**
     * Writes a histogram of `data` in `buckets` (default 30) equal-width buckets, as the
     * `histograms` plugin's [k, 3] tensor of [left, right, count].
     */
    histogram(name: string, data: Tensor|number[]|Float32Array, step: number,
              buckets?: number, description?: string): void;
    /** Writes queued events to the event file. */
    flush(): void;
    /** The `tensorflow` backend, as tfjs-node's writer has it (for leak checks around writes). */
    readonly backend: TensorFlowBackend;
  }

  /**
   * The event-file writer for `logdir` (created recursively; one writer per directory).
   * Events are queued and written when more than `maxQueue` (10) wait, `flushMillis`
   * (120000) after the first queued one, on `flush()` and at process exit. The file is
   * `events.out.tfevents.<time>.<host>.<pid>.<n><filenameSuffix>` ('.v2').
   */
  export function summaryFileWriter(logdir: string, maxQueue?: number, flushMillis?: number,
                             filenameSuffix?: string): SummaryFileWriter;

  export interface TensorBoardCallbackArgs {
    /** 'epoch' (default): log after each epoch; 'batch': also after each batch. */
    updateFreq?: 'batch'|'epoch';
    /** Weight histograms every this many epochs; 0 (default) = never. */
    histogramFreq?: number;
  }

  /**
   * A `model.fit` callback: metrics go to `<logdir>/train` and (val_*) `<logdir>/val` as
   * `epoch_<metric>` (step = epoch + 1) and `batch_<metric>` (step = batches seen).
   */
  export class TensorBoardCallback extends Callback {
    constructor(logdir?: string, args?: TensorBoardCallbackArgs);
    /** The writer of `<logdir>/train`, once created (by a fit or the method below). */
    trainWriter: SummaryFileWriter|null;
    /** The writer of `<logdir>/val`, once created. */
    valWriter: SummaryFileWriter|null;
    /** Creates `trainWriter` if it does not exist yet (tfjs-node's name); returns it. */
    ensureTrainWriterCreated(): SummaryFileWriter;
    /** Creates `valWriter` if it does not exist yet; returns it. */
    ensureValWriterCreated(): SummaryFileWriter;
  }

  export function tensorBoard(logdir?: string, args?: TensorBoardCallbackArgs): TensorBoardCallback;
}

// Added to tf.io when the package loads (tf.io is @tensorflow/tfjs's io namespace):
declare module '@tensorflow/tfjs-core/dist/io/io' {
  /**
   * The file system handler: a directory to save into (model.json + weights.bin) or a
   * model.json to load (weights beside it), or [model.json, weights.bin]. `file://` URLs
   * route here for model.save / tf.loadLayersModel / tf.loadGraphModel.
   */
  function fileSystem(path: string|string[]): io.IOHandler;
  /** tfjs's http handler over Node's fetch; `requestInit` goes to every request. */
  function nodeHTTPRequest(path: string, requestInit?: RequestInit,
                           weightPathPrefix?: string): io.IOHandler;
}
