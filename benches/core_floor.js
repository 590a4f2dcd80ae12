'use strict';
// The per-op cost of tfjs-core itself: a backend whose one kernel adds two float32 scalars in JS,
// so that `tf.add(a, b).dispose()` on it is tfjs-core's dispatch (kernel lookup, tensor
// bookkeeping, scopes) and next to nothing else. Any backend under tfjs-core pays this on top of
// its own work: for a TF backend, on top of TF's `TFE_Execute`, whose cost the C loop
// (benches/c) measures. Their sum is the lowest per-op a TF backend for tfjs can reach.

const tfc = require('@tensorflow/tfjs-core');

const NAME = 'tfjs-core';

class ScalarAddBackend extends tfc.KernelBackend {
  constructor() {
    super();
    this.data = new tfc.DataStorage(this, tfc.engine());
  }

  write(values, shape, dtype) {
    const dataId = {};
    this.data.set(dataId, {values, dtype, refCount: 1});
    return dataId;
  }

  move(dataId, values, shape, dtype, refCount) {
    this.data.set(dataId, {values, dtype, refCount});
  }

  readSync(dataId) {
    return this.data.get(dataId).values;
  }

  async read(dataId) {
    return this.readSync(dataId);
  }

  numDataIds() {
    return this.data.numDataIds();
  }

  disposeData(dataId) {
    this.data.delete(dataId);
    return true;
  }

  refCount(dataId) {
    return this.data.has(dataId) ? this.data.get(dataId).refCount : 0;
  }

  memory() {
    return {unreliable: true};
  }

  floatPrecision() {
    return 32;
  }

  epsilon() {
    return 1e-7;
  }

  dispose() {}
}

function addScalars({inputs: {a, b}, backend}) {
  if (a.shape.length !== 0 || b.shape.length !== 0 || a.dtype !== 'float32' ||
      b.dtype !== 'float32') {
    throw new Error('the tfjs-core floor backend adds float32 scalars only');
  }
  const sum = backend.readSync(a.dataId)[0] + backend.readSync(b.dataId)[0];
  return {dataId: backend.write(new Float32Array([sum]), [], 'float32'), shape: [],
          dtype: 'float32'};
}

/** tfjs-core with the floor backend registered and active. */
async function coreFloorTf() {
  if (tfc.findBackend(NAME) == null) {
    tfc.registerBackend(NAME, () => new ScalarAddBackend());
    tfc.registerKernel({kernelName: tfc.Add, backendName: NAME, kernelFunc: addScalars});
  }
  await tfc.setBackend(NAME);
  return tfc;
}

module.exports = {NAME, coreFloorTf};
