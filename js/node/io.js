'use strict';
// Model IO for Node: the `file://` handler (model.json + weights.bin, as tfjs-node writes
// them; or a binary GraphDef + weights manifest) and `tf.io.nodeHTTPRequest` (tfjs's http
// handler over tfjs's platform fetch); `savedmodel://` saves through saved_model_export.js.

const fs = require('fs');
const path = require('path');
const tfc = require('@tensorflow/tfjs-core');
// graph_def.js (with proto.js) and saved_model_export.js load at their first use: most programs
// never read a binary GraphDef nor export a SavedModel, and requiring them cost a start 4 ms.

const URL_SCHEME = 'file://';
const MODEL_JSON_FILENAME = 'model.json';
const WEIGHTS_BINARY_FILENAME = 'weights.bin';

/** One ArrayBuffer of `weightData` (an ArrayBuffer or an array of them). */
function joinWeightData(weightData) {
  if (weightData == null) return null;
  if (!Array.isArray(weightData)) return weightData;
  const total = weightData.reduce((n, b) => n + b.byteLength, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const b of weightData) {
    out.set(new Uint8Array(b), offset);
    offset += b.byteLength;
  }
  return out.buffer;
}

const OPTIONAL_JSON_FIELDS = ['signature', 'userDefinedMetadata', 'modelInitializer',
                              'initializerSignature', 'trainingConfig'];

/** The `model.json` object of `artifacts` with `weightsManifest`. */
function modelJSONFor(artifacts, weightsManifest) {
  const json = {
    modelTopology: artifacts.modelTopology,
    format: artifacts.format,
    generatedBy: artifacts.generatedBy,
    convertedBy: artifacts.convertedBy,
    weightsManifest,
  };
  for (const key of OPTIONAL_JSON_FIELDS) {
    if (artifacts[key] != null) json[key] = artifacts[key];
  }
  return json;
}

/** A Node Buffer's bytes as a standalone ArrayBuffer. */
function toArrayBuffer(buf) {
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
}

async function statOrNull(p) {
  try {
    return await fs.promises.stat(p);
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * The file a weights manifest path names, read only from the model's own folder `dir`: a path
 * that leaves it (`..`, absolute, or a symlink pointing out) is refused, so a model.json
 * cannot make the loader read any other file as weights.
 */
async function weightsFileIn(dir, p, jsonPath) {
  const refuse = (where, folder) => new Error(
      `The weights path '${p}' in ${jsonPath} resolves to ${where}, outside the model's ` +
      `folder ${folder}: weights are read only from the model's folder`);
  const file = path.resolve(dir, p);
  if (!isInside(dir, file)) throw refuse(file, dir);
  // A file that does not exist is left to the read, which reports it.
  const [realDir, real] = await Promise.all([
    fs.promises.realpath(dir), fs.promises.realpath(file).catch(() => file)]);
  if (!isInside(realDir, real)) throw refuse(real, realDir);
  return real;
}

function isInside(dir, file) {
  const rel = path.relative(dir, file);
  return rel !== '' && !rel.startsWith('..' + path.sep) && rel !== '..' && !path.isAbsolute(rel);
}

/**
 * Saves to a directory (`model.json` + `weights.bin`) and loads from a `model.json` path (its
 * weights files beside it), from `[model.json, weights file]`, or, as tfjs-node, from
 * `[model.pb, weights_manifest.json]` (a binary GraphDef; weights beside the manifest).
 */
class NodeFileSystem {
  constructor(p) {
    if (Array.isArray(p)) {
      if (p.length !== 2 || p.some((x) => typeof x !== 'string')) {
        throw new Error('file paths must be a path or an array of [model.json, weights file] ' +
                        `paths, got ${p.length} paths`);
      }
      this.path = p.map((x) => path.resolve(x));
    } else if (typeof p === 'string' && p !== '') {
      this.path = path.resolve(p);
    } else {
      throw new TypeError('the file path must be a non-empty string');
    }
    this.MODEL_JSON_FILENAME = MODEL_JSON_FILENAME;
    this.WEIGHTS_BINARY_FILENAME = WEIGHTS_BINARY_FILENAME;
  }

  async save(modelArtifacts) {
    if (Array.isArray(this.path)) {
      throw new Error('Cannot perform saving to multiple paths.');
    }
    await this.createOrVerifyDirectory();
    if (modelArtifacts.modelTopology instanceof ArrayBuffer) {
      throw new Error('NodeFileSystem.save() does not support saving model topology in ' +
                      'binary format.');
    }
    const weightsManifest = [{
      paths: [WEIGHTS_BINARY_FILENAME],
      weights: modelArtifacts.weightSpecs || [],
    }];
    const modelJSON = modelJSONFor(modelArtifacts, weightsManifest);
    const weightData = joinWeightData(modelArtifacts.weightData) || new ArrayBuffer(0);
    await fs.promises.writeFile(path.join(this.path, MODEL_JSON_FILENAME),
                                JSON.stringify(modelJSON), 'utf8');
    await fs.promises.writeFile(path.join(this.path, WEIGHTS_BINARY_FILENAME),
                                Buffer.from(weightData));
    return {
      modelArtifactsInfo: tfc.io.getModelArtifactsInfoForJSON(
          Object.assign({}, modelArtifacts, {weightData})),
    };
  }

  async createOrVerifyDirectory() {
    const st = await statOrNull(this.path);
    if (st === null) {
      await fs.promises.mkdir(this.path, {recursive: true});
    } else if (!st.isDirectory()) {
      throw new Error(`Path ${this.path} exists as a file. The path must be either ` +
                      'nonexistent or a directory.');
    }
  }

  async load() {
    if (!Array.isArray(this.path)) return this.loadJSONModel(this.path, null);
    const [first, second] = this.path;
    const manifest = await readJSONIfManifest(second);
    return manifest === null ? this.loadJSONModel(first, second) :
                               this.loadBinaryModel(first, second, manifest);
  }

  async loadJSONModel(jsonPath, weightsPath) {
    await checkFile(jsonPath);
    let modelJSON;
    try {
      modelJSON = JSON.parse(await fs.promises.readFile(jsonPath, 'utf8'));
    } catch (e) {
      throw new Error(`Failed to parse model JSON ${jsonPath}: ${e.message}`, {cause: e});
    }
    if (modelJSON == null || typeof modelJSON !== 'object' || modelJSON.modelTopology == null) {
      throw new Error(`${jsonPath} is not a model JSON file: it has no modelTopology`);
    }
    return tfc.io.getModelArtifactsForJSON(
        modelJSON, (manifest) => this.loadWeights(manifest, jsonPath, weightsPath));
  }

  async loadBinaryModel(graphPath, manifestPath, manifest) {
    await checkFile(graphPath);
    let modelTopology;
    try {
      modelTopology = require('./graph_def').decodeGraphDef(await fs.promises.readFile(graphPath));
    } catch (e) {
      if (!(e instanceof require('./proto').ProtoError)) throw e;
      throw new Error(`${graphPath} is not a binary TensorFlow GraphDef: ${e.message}`, {cause: e});
    }
    const [weightSpecs, weightData] = await this.loadWeights(manifest, manifestPath, null);
    return {modelTopology, weightSpecs, weightData, format: 'graph-model'};
  }

  async loadWeights(manifest, jsonPath, weightsPath) {
    const dir = path.dirname(jsonPath);
    const buffers = [];
    const weightSpecs = [];
    for (const group of manifest) {
      for (const p of group.paths) {
        const file = weightsPath != null ? weightsPath : await weightsFileIn(dir, p, jsonPath);
        const buf = await fs.promises.readFile(file).catch((e) => {
          // tfjs-node's words first (its specs match them), then which manifest named the file.
          const what = e.code === 'ENOENT' ? 'does not exist: loading failed' : e.message;
          throw new Error(`Weight file ${file} ${what} (named in ${jsonPath})`, {cause: e});
        });
        buffers.push(toArrayBuffer(buf));
      }
      weightSpecs.push(...group.weights);
    }
    const weightData = joinWeightData(buffers);
    const needed = weightSpecs.reduce((n, s) => n + weightBytes(s), 0);
    if (weightData.byteLength < needed) {
      throw new Error(`The weights of ${jsonPath} need ${needed} bytes, but its weights files ` +
                      `hold ${weightData.byteLength}`);
    }
    return [weightSpecs, weightData];
  }
}

/** Throws unless `p` is an existing file. */
async function checkFile(p) {
  const st = await statOrNull(p);
  if (st === null) throw new Error(`Path ${p} does not exist: loading failed`);
  if (!st.isFile()) {
    throw new Error('The path to load from must be a file. Loading from a directory is not ' +
                    `supported: ${p}`);
  }
}

/**
 * The weights manifest in file `p` (a JSON array of `{paths, weights}` groups), or null when
 * `p` holds something else (the weights of a `[model.json, weights]` pair).
 */
async function readJSONIfManifest(p) {
  await checkFile(p);
  // A weights file can be hundreds of MB: only a file that starts like a JSON array is parsed.
  const handle = await fs.promises.open(p, 'r');
  let head;
  try {
    head = (await handle.read(Buffer.alloc(256), 0, 256, 0)).buffer;
  } finally {
    await handle.close();
  }
  if (!/^\s*\[/.test(head.toString('latin1'))) return null;
  let value;
  try {
    value = JSON.parse(await fs.promises.readFile(p, 'utf8'));
  } catch {
    return null;
  }
  const isManifest = Array.isArray(value) &&
      value.every((g) => g != null && Array.isArray(g.paths) && Array.isArray(g.weights));
  return isManifest ? value : null;
}

const DTYPE_BYTES = {float32: 4, int32: 4, bool: 1, uint8: 1, uint16: 2, float16: 2,
                     complex64: 8};

/** Bytes of one weight as stored (quantized weights by their quantized dtype). */
function weightBytes(spec) {
  const size = (spec.shape || []).reduce((a, b) => a * b, 1);
  if (spec.quantization != null) return size * (DTYPE_BYTES[spec.quantization.dtype] || 1);
  if (spec.dtype === 'string') return 0;
  return size * (DTYPE_BYTES[spec.dtype] || 4);
}

/** The `file://` handler for a path (a directory to save to, a model.json to load from). */
function fileSystem(p) {
  return new NodeFileSystem(p);
}

/** Router for `file://` URLs (and arrays of them), for both saving and loading. */
function nodeFileSystemRouter(url) {
  if (Array.isArray(url)) {
    if (url.every((u) => typeof u === 'string' && u.startsWith(URL_SCHEME))) {
      return new NodeFileSystem(url.map((u) => u.slice(URL_SCHEME.length)));
    }
    return null;
  }
  if (typeof url === 'string' && url.startsWith(URL_SCHEME)) {
    return new NodeFileSystem(url.slice(URL_SCHEME.length));
  }
  return null;
}

/**
 * tfjs's HTTP handler: loads a model from an http(s) URL, or saves one by POSTing it there.
 * `requestInit` goes to every fetch (headers, credentials). Requests go through tfjs's
 * platform fetch (`tf.env().platform.fetch`, Node's fetch by default), which applications and
 * tests may replace; weights resolve relative to the model URL, as in tfjs.
 */
function nodeHTTPRequest(url, requestInit, weightPathPrefix) {
  return tfc.io.http(url, {requestInit, weightPathPrefix});
}

const SAVED_MODEL_SCHEME = 'savedmodel://';

/**
 * Router for `savedmodel://dir` URLs: `model.save('savedmodel://dir')` exports a LayersModel or
 * GraphModel as `tf.node.saveSavedModel` does. tfjs hands a save handler the model's artifacts,
 * not the model, so the handler rebuilds the model from them (in memory) and exports that.
 */
function savedModelRouter(url) {
  if (typeof url !== 'string' || !url.startsWith(SAVED_MODEL_SCHEME)) return null;
  const dir = url.slice(SAVED_MODEL_SCHEME.length);
  return {
    async save(artifacts) {
      const handler = tfc.io.fromMemory(artifacts);
      const model = artifacts.format === 'graph-model' ?
        await require('@tensorflow/tfjs-converter').loadGraphModel(handler) :
        await require('@tensorflow/tfjs-layers').loadLayersModel(handler);
      try {
        return await require('./saved_model_export').saveSavedModel(model, dir);
      } finally {
        model.dispose();
      }
    },
  };
}

let installed = false;

/**
 * Registers the `file://` routers and the `savedmodel://` save router, and adds `tf.io.fileSystem` / `tf.io.nodeHTTPRequest`. */
function installIO() {
  if (installed) return;
  installed = true;
  tfc.io.registerSaveRouter(nodeFileSystemRouter);
  tfc.io.registerLoadRouter(nodeFileSystemRouter);
  tfc.io.registerSaveRouter(savedModelRouter);
  tfc.io.fileSystem = fileSystem;
  tfc.io.nodeHTTPRequest = nodeHTTPRequest;
}

module.exports = {
  installIO,
  NodeFileSystem,
  fileSystem,
  nodeFileSystemRouter,
  nodeHTTPRequest,
};
