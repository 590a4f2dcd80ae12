'use strict';
// `npm start`: trains a small model on the `tensorflow` backend (TensorFlow's
// C runtime) and prints the backend, the loss falling epoch by epoch, and the
// model's predictions.
//
// The task: fit y = 2x - 1 with a one-unit dense layer, then classify points
// of two interleaved spirals with a small MLP.

const tf = require('..');

async function fitLine() {
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 1, inputShape: [1]}));
  model.compile({optimizer: tf.train.sgd(0.05), loss: 'meanSquaredError'});

  const xs = tf.tensor2d([-1, 0, 1, 2, 3, 4], [6, 1]);
  const ys = tf.tensor2d([-3, -1, 1, 3, 5, 7], [6, 1]);
  console.log('\nFitting y = 2x - 1 with one dense unit:');
  await model.fit(xs, ys, {
    epochs: 60,
    verbose: 0,
    callbacks: {
      onEpochEnd: (epoch, logs) => {
        if (epoch % 10 === 0 || epoch === 59) {
          console.log(`  epoch ${String(epoch + 1).padStart(3)}  loss ${logs.loss.toFixed(5)}`);
        }
      },
    },
  });
  const probe = tf.tensor2d([10, -5, 0.5], [3, 1]);
  const pred = model.predict(probe);
  const values = await pred.data();
  console.log('  predictions:');
  [10, -5, 0.5].forEach((x, i) => {
    console.log(`    x = ${String(x).padStart(4)}  ->  ${values[i].toFixed(3)}  (true ${2 * x - 1})`);
  });
  tf.dispose([xs, ys, probe, pred]);
  model.dispose();
}

function spirals(n) {
  const xs = [], ys = [];
  for (let i = 0; i < n; i++) {
    const label = i % 2;
    const r = (i / n) * 4 + 0.3;
    const t = r * 1.8 + label * Math.PI;
    xs.push(r * Math.cos(t) / 4, r * Math.sin(t) / 4);
    ys.push(label);
  }
  return [tf.tensor2d(xs, [n, 2]), tf.tensor2d(ys, [n, 1])];
}

async function classifySpirals() {
  const [xs, ys] = spirals(400);
  const model = tf.sequential({layers: [
    tf.layers.dense({units: 32, activation: 'relu', inputShape: [2]}),
    tf.layers.dense({units: 32, activation: 'relu'}),
    tf.layers.dense({units: 1, activation: 'sigmoid'}),
  ]});
  model.compile({optimizer: tf.train.adam(0.02), loss: 'binaryCrossentropy',
                 metrics: ['accuracy']});
  console.log('\nClassifying two spirals with a 2-32-32-1 MLP:');
  await model.fit(xs, ys, {
    epochs: 100,
    batchSize: 64,
    shuffle: true,
    verbose: 0,
    callbacks: {
      onEpochEnd: (epoch, logs) => {
        if (epoch % 20 === 0 || epoch === 99) {
          console.log(`  epoch ${String(epoch + 1).padStart(3)}  loss ${logs.loss.toFixed(4)}` +
                      `  accuracy ${(logs.acc * 100).toFixed(1)}%`);
        }
      },
    },
  });
  const points = [[0, 0.3], [0.5, -0.5], [-0.8, 0.2]];
  const probe = tf.tensor2d(points.flat(), [points.length, 2]);
  const pred = model.predict(probe);
  const p = await pred.data();
  console.log('  predictions (probability of spiral 1):');
  points.forEach(([x, y], i) => {
    console.log(`    (${x.toFixed(1)}, ${y.toFixed(1)})  ->  ${p[i].toFixed(3)}`);
  });
  tf.dispose([xs, ys, probe, pred]);
  model.dispose();
}

async function main() {
  await tf.ready();
  console.log(`tfjs-node-rs ${tf.version['tfjs-node-rs']} on backend '${tf.getBackend()}'` +
              ` (tfjs ${tf.version.tfjs})`);
  await fitLine();
  await classifySpirals();
  const mem = tf.memory();
  console.log(`\nmemory: ${mem.numTensors} tensors, ${mem.numBytesInTF} bytes in TensorFlow`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
