'use strict';
// The layers benchmark suite (../shared/reference/benchmark-suite.md), built with whatever `tf`
// the caller loaded, so every backend runs the very same model definitions.
//
// Each entry: {name, batch, inputShapes, outputShapes, fit: {optimizer, learningRate, loss} | null,
// and build(tf) (an uncompiled tf.LayersModel) or load(tf) (a GraphModel)}; `workload` marks the
// user workloads beyond the suite. Inputs and targets are random uniform of shape
// [batch] + shape (word ids where `inputInts` is set).

const fs = require('fs');
const path = require('path');

function denseTiny(tf) {
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 200, activation: 'relu', inputShape: [100]}));
  model.add(tf.layers.dense({units: 1}));
  return model;
}

function denseLarge(tf) {
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 4000, activation: 'relu', inputShape: [100]}));
  model.add(tf.layers.dense({units: 1000, activation: 'relu'}));
  model.add(tf.layers.dense({units: 500, activation: 'relu'}));
  model.add(tf.layers.dense({units: 1}));
  return model;
}

function convolutional(filters) {
  return (tf) => {
    const model = tf.sequential();
    model.add(tf.layers.conv2d(
        {filters, kernelSize: 3, padding: 'valid', inputShape: [28, 28, 1]}));
    model.add(tf.layers.activation({activation: 'relu'}));
    model.add(tf.layers.conv2d({filters, kernelSize: 3}));
    model.add(tf.layers.activation({activation: 'relu'}));
    model.add(tf.layers.maxPooling2d({poolSize: 2}));
    model.add(tf.layers.flatten());
    model.add(tf.layers.dense({units: 128, activation: 'relu'}));
    model.add(tf.layers.dense({units: 10, activation: 'softmax'}));
    return model;
  };
}

function rnn(kind) {
  return (tf) => {
    const model = tf.sequential();
    const layer = {simpleRNN: tf.layers.simpleRNN, gru: tf.layers.gru, lstm: tf.layers.lstm}[kind];
    model.add(layer({units: 20, inputShape: [20, 20], returnSequences: false}));
    return model;
  };
}

// MobileNet v1 as keras.applications builds it (alpha 0.5, depth multiplier 1, top included,
// 1000 classes), random weights.
function mobilenet(tf) {
  const alpha = 0.5;
  const input = tf.input({shape: [224, 224, 3]});
  const bnRelu6 = (x) => tf.layers.reLU({maxValue: 6}).apply(
      tf.layers.batchNormalization({axis: -1}).apply(x));
  let x = tf.layers.zeroPadding2d({padding: [[0, 1], [0, 1]]}).apply(input);
  x = tf.layers.conv2d({filters: 32 * alpha, kernelSize: 3, strides: 2, padding: 'valid',
                        useBias: false}).apply(x);
  x = bnRelu6(x);
  const blocks = [[64, 1], [128, 2], [128, 1], [256, 2], [256, 1], [512, 2], [512, 1], [512, 1],
                  [512, 1], [512, 1], [512, 1], [1024, 2], [1024, 1]];
  for (const [pointwise, stride] of blocks) {
    if (stride === 2) x = tf.layers.zeroPadding2d({padding: [[0, 1], [0, 1]]}).apply(x);
    x = tf.layers.depthwiseConv2d({kernelSize: 3, strides: stride,
                                   padding: stride === 1 ? 'same' : 'valid',
                                   useBias: false}).apply(x);
    x = bnRelu6(x);
    x = tf.layers.conv2d({filters: pointwise * alpha, kernelSize: 1, padding: 'same',
                          useBias: false}).apply(x);
    x = bnRelu6(x);
  }
  const channels = 1024 * alpha;
  x = tf.layers.globalAveragePooling2d({}).apply(x);
  x = tf.layers.reshape({targetShape: [1, 1, channels]}).apply(x);
  x = tf.layers.dropout({rate: 1e-3}).apply(x);
  x = tf.layers.conv2d({filters: 1000, kernelSize: 1, padding: 'same'}).apply(x);
  x = tf.layers.reshape({targetShape: [1000]}).apply(x);
  const output = tf.layers.activation({activation: 'softmax'}).apply(x);
  return tf.model({inputs: input, outputs: output});
}

// The date-translation attention model (Tx 30, Ty 10, encoder 2×32 units, decoder 64 units).
function attention(tf) {
  const Tx = 30, Ty = 10, nA = 32, nS = 64, inVocab = 38, outVocab = 11;
  const X = tf.input({shape: [Tx, inVocab]});
  const s0 = tf.input({shape: [nS]});
  const c0 = tf.input({shape: [nS]});
  const a = tf.layers.bidirectional({
    layer: tf.layers.lstm({units: nA, returnSequences: true, recurrentActivation: 'hardSigmoid'}),
    mergeMode: 'concat',
  }).apply(X);
  const repeator = tf.layers.repeatVector({n: Tx});
  const concatenator = tf.layers.concatenate({axis: -1});
  const densor1 = tf.layers.dense({units: 10, activation: 'tanh'});
  const densor2 = tf.layers.dense({units: 1, activation: 'relu'});
  // Softmax over the time axis: tfjs's softmax takes only the last axis, so the [Tx, 1]
  // energies go through it as [Tx].
  const toTime = tf.layers.reshape({targetShape: [Tx]});
  const timeSoftmax = tf.layers.softmax();
  const fromTime = tf.layers.reshape({targetShape: [Tx, 1]});
  const activator = {apply: (x) => fromTime.apply(timeSoftmax.apply(toTime.apply(x)))};
  const dotor = tf.layers.dot({axes: 1});
  const decoder = tf.layers.lstm(
      {units: nS, returnState: true, recurrentActivation: 'hardSigmoid'});
  const outputLayer = tf.layers.dense({units: outVocab, activation: 'softmax'});
  let s = s0, c = c0;
  const outputs = [];
  for (let t = 0; t < Ty; t++) {
    const rep = repeator.apply(s);
    const concat = concatenator.apply([a, rep]);
    const energies = densor2.apply(densor1.apply(concat));
    const alphas = activator.apply(energies);
    const context = dotor.apply([alphas, a]);
    [s, , c] = decoder.apply(context, {initialState: [s, c]});
    outputs.push(outputLayer.apply(s));
  }
  return tf.model({inputs: [X, s0, c0], outputs});
}

// ---------------------------------------------------------------- user workloads
// Programs as users write them, beyond the 2019 suite: each built, trained and then asked for
// predictions, like the suite's models.

// The Keras MNIST example's convnet: two convolutions, pooling, dropout, a dense head.
function mnistConvnet(tf) {
  const model = tf.sequential();
  model.add(tf.layers.conv2d({filters: 32, kernelSize: 3, activation: 'relu',
                              inputShape: [28, 28, 1]}));
  model.add(tf.layers.conv2d({filters: 64, kernelSize: 3, activation: 'relu'}));
  model.add(tf.layers.maxPooling2d({poolSize: 2}));
  model.add(tf.layers.dropout({rate: 0.25}));
  model.add(tf.layers.flatten());
  model.add(tf.layers.dense({units: 128, activation: 'relu'}));
  model.add(tf.layers.dropout({rate: 0.5}));
  model.add(tf.layers.dense({units: 10, activation: 'softmax'}));
  return model;
}

const TEXT_VOCAB = 5000;
const TEXT_LENGTH = 80;

// A sentiment classifier over word ids (the IMDB example's shape): embedding, LSTM, sigmoid.
function textLstm(tf) {
  const model = tf.sequential();
  model.add(tf.layers.embedding({inputDim: TEXT_VOCAB, outputDim: 32,
                                 inputShape: [TEXT_LENGTH]}));
  model.add(tf.layers.lstm({units: 32}));
  model.add(tf.layers.dense({units: 1, activation: 'sigmoid'}));
  return model;
}

// A small ResNet on CIFAR-shaped images: a stem convolution, one residual block of two
// convolutions with BatchNormalization and an identity shortcut, global pooling, softmax.
function resnetBlock(tf) {
  const convBn = (x, relu) => {
    const y = tf.layers.batchNormalization().apply(
        tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', useBias: false})
            .apply(x));
    return relu ? tf.layers.reLU().apply(y) : y;
  };
  const input = tf.input({shape: [32, 32, 3]});
  const stem = convBn(input, true);
  const branch = convBn(convBn(stem, true), false);
  const sum = tf.layers.reLU().apply(tf.layers.add().apply([stem, branch]));
  const pooled = tf.layers.globalAveragePooling2d({}).apply(sum);
  const output = tf.layers.dense({units: 10, activation: 'softmax'}).apply(pooled);
  return tf.model({inputs: input, outputs: output});
}

/**
 * A GraphModel made by `tensorflowjs_converter` (scripts/make_fixtures.py bench_graph_model: a
 * small Keras convnet, exported and converted), loaded from its files through
 * `tf.io.fromMemory`, so that every backend, pure-JS ones included, loads it the same way.
 */
function graphModelLoader(dir) {
  return async (tf) => {
    const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
    const weightSpecs = json.weightsManifest.flatMap((group) => group.weights);
    const buffers = json.weightsManifest.flatMap((group) => group.paths)
        .map((p) => fs.readFileSync(path.join(dir, p)));
    const all = Buffer.concat(buffers);
    const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
    return tf.loadGraphModel(tf.io.fromMemory({...json, weightSpecs, weightData}));
  };
}

const GRAPH_MODEL_DIR = path.join(__dirname, 'fixtures', 'graph_convnet');

// `fit`: the optimizer by its tf.train name (default learning rate when none), the loss by its
// tfjs name; the Keras worker (benches/keras/worker.py) maps both to Keras's.
const MODELS = [
  {name: 'dense-tiny', batch: 128, build: denseTiny, inputShapes: [[100]], outputShapes: [[1]],
   fit: {optimizer: 'sgd', learningRate: 0.1, loss: 'meanSquaredError'}},
  {name: 'dense-large', batch: 128, build: denseLarge, inputShapes: [[100]],
   outputShapes: [[1]], fit: {optimizer: 'sgd', learningRate: 0.1, loss: 'meanSquaredError'}},
  {name: 'convolutional-1filters', batch: 128, build: convolutional(1),
   inputShapes: [[28, 28, 1]], outputShapes: [[10]],
   fit: {optimizer: 'adam', loss: 'categoricalCrossentropy'}},
  {name: 'convolutional-32filters', batch: 128, build: convolutional(32),
   inputShapes: [[28, 28, 1]], outputShapes: [[10]],
   fit: {optimizer: 'adam', loss: 'categoricalCrossentropy'}},
  {name: 'rnn-SimpleRNN', batch: 128, build: rnn('simpleRNN'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: 'rmsprop', learningRate: 0.01, loss: 'categoricalCrossentropy'}},
  {name: 'rnn-GRU', batch: 128, build: rnn('gru'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: 'rmsprop', learningRate: 0.01, loss: 'categoricalCrossentropy'}},
  {name: 'rnn-LSTM', batch: 128, build: rnn('lstm'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: 'rmsprop', learningRate: 0.01, loss: 'categoricalCrossentropy'}},
  {name: 'mobilenet', batch: 8, build: mobilenet, inputShapes: [[224, 224, 3]],
   outputShapes: [[1000]], fit: null},
  {name: 'attention', batch: 32, build: attention, inputShapes: [[30, 38], [64], [64]],
   outputShapes: new Array(10).fill([11]), fit: null},
  {name: 'mnist-convnet', workload: true, batch: 128, build: mnistConvnet,
   inputShapes: [[28, 28, 1]], outputShapes: [[10]],
   fit: {optimizer: 'adam', loss: 'categoricalCrossentropy'}},
  {name: 'text-lstm', workload: true, batch: 64, build: textLstm, inputShapes: [[TEXT_LENGTH]],
   inputInts: TEXT_VOCAB, outputShapes: [[1]],
   fit: {optimizer: 'rmsprop', learningRate: 0.001, loss: 'binaryCrossentropy'}},
  {name: 'resnet-block', workload: true, batch: 32, build: resnetBlock,
   inputShapes: [[32, 32, 3]], outputShapes: [[10]],
   fit: {optimizer: 'adam', loss: 'categoricalCrossentropy'}},
  {name: 'graph-model', workload: true, batch: 128, load: graphModelLoader(GRAPH_MODEL_DIR),
   inputShapes: [[28, 28, 1]], outputShapes: [[10]], fit: null},
];

/** The spec's inputs (or targets): random uniform, word ids in [0, inputInts) where it has them. */
function inputs(tf, spec) {
  const xs = spec.inputShapes.map((s) => (spec.inputInts ?
    tf.randomUniform([spec.batch, ...s], 0, spec.inputInts, 'int32') :
    tf.randomUniform([spec.batch, ...s])));
  return xs.length === 1 ? xs[0] : xs;
}

function targets(tf, spec) {
  const ys = spec.outputShapes.map((s) => tf.randomUniform([spec.batch, ...s]));
  return ys.length === 1 ? ys[0] : ys;
}

/** The model, built (or loaded) on `tf`, compiled when the spec trains it. */
async function build(tf, spec) {
  const model = spec.load ? await spec.load(tf) : spec.build(tf);
  if (spec.fit) {
    const {optimizer, learningRate, loss} = spec.fit;
    const opt = learningRate == null ? tf.train[optimizer]() : tf.train[optimizer](learningRate);
    model.compile({optimizer: opt, loss});
  }
  return model;
}

/** What a worker in another language needs to know of a spec (all but the JS builder). */
function describe(spec) {
  const {name, workload, batch, inputShapes, inputInts, outputShapes, fit} = spec;
  return {name, workload: !!workload, batch, inputShapes, inputInts: inputInts || null,
          outputShapes, fit, graphModel: !!spec.load};
}

module.exports = {MODELS, inputs, targets, build, describe, GRAPH_MODEL_DIR,
                  byName: (name) => MODELS.find((m) => m.name === name)};
