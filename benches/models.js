'use strict';
// The layers benchmark suite (../shared/reference/benchmark-suite.md), built with whatever `tf`
// the caller loaded, so every backend runs the very same model definitions.
//
// Each entry: {name, batch, inputShapes, outputShapes, fit: {optimizer, loss} | null, build(tf)}.
// `build` returns an uncompiled tf.LayersModel; inputs/targets are random uniform of shape
// [batch] + shape.

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

const MODELS = [
  {name: 'dense-tiny', batch: 128, build: denseTiny, inputShapes: [[100]], outputShapes: [[1]],
   fit: {optimizer: (tf) => tf.train.sgd(0.1), loss: 'meanSquaredError'}},
  {name: 'dense-large', batch: 128, build: denseLarge, inputShapes: [[100]],
   outputShapes: [[1]],
   fit: {optimizer: (tf) => tf.train.sgd(0.1), loss: 'meanSquaredError'}},
  {name: 'convolutional-1filters', batch: 128, build: convolutional(1),
   inputShapes: [[28, 28, 1]], outputShapes: [[10]],
   fit: {optimizer: (tf) => tf.train.adam(), loss: 'categoricalCrossentropy'}},
  {name: 'convolutional-32filters', batch: 128, build: convolutional(32),
   inputShapes: [[28, 28, 1]], outputShapes: [[10]],
   fit: {optimizer: (tf) => tf.train.adam(), loss: 'categoricalCrossentropy'}},
  {name: 'rnn-SimpleRNN', batch: 128, build: rnn('simpleRNN'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: (tf) => tf.train.rmsprop(0.01), loss: 'categoricalCrossentropy'}},
  {name: 'rnn-GRU', batch: 128, build: rnn('gru'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: (tf) => tf.train.rmsprop(0.01), loss: 'categoricalCrossentropy'}},
  {name: 'rnn-LSTM', batch: 128, build: rnn('lstm'), inputShapes: [[20, 20]],
   outputShapes: [[20]],
   fit: {optimizer: (tf) => tf.train.rmsprop(0.01), loss: 'categoricalCrossentropy'}},
  {name: 'mobilenet', batch: 8, build: mobilenet, inputShapes: [[224, 224, 3]],
   outputShapes: [[1000]], fit: null},
  {name: 'attention', batch: 32, build: attention, inputShapes: [[30, 38], [64], [64]],
   outputShapes: new Array(10).fill([11]), fit: null},
];

// The (model, method) pairs of the suite, in order.
function cases() {
  const out = [];
  for (const m of MODELS) {
    out.push({model: m.name, method: 'predict'});
    if (m.fit) out.push({model: m.name, method: 'fit'});
  }
  return out;
}

module.exports = {MODELS, cases, byName: (name) => MODELS.find((m) => m.name === name)};
