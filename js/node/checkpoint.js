'use strict';
// A TF checkpoint (the `variables/` of a SavedModel, issue 38) written by TF's own SaveV2 op,
// run eagerly on the backend's tensors: the bundle's `.index` and `.data-00000-of-00001` files
// are TF's, byte for byte, so TF restores them with RestoreV2 as it restores its own.

const {tensorflowBackend} = require('./backend');

/**
 * Writes `tensors` (name -> tf.Tensor) as the checkpoint `prefix` (e.g. `dir/variables/variables`;
 * its folder must exist).
 */
function writeCheckpoint(prefix, tensors) {
  if (typeof prefix !== 'string' || prefix === '') {
    throw new TypeError('writeCheckpoint: the checkpoint prefix must be a non-empty string');
  }
  const names = Object.keys(tensors);
  if (names.length === 0) throw new Error('writeCheckpoint: no tensors to save');
  for (const name of names) {
    const t = tensors[name];
    if (name === '') throw new Error('writeCheckpoint: a tensor name is empty');
    if (t === null || typeof t !== 'object' || typeof t.dtype !== 'string' || t.isDisposed) {
      throw new TypeError(`writeCheckpoint: '${name}' is not a live tf.Tensor`);
    }
  }
  const b = tensorflowBackend('writeCheckpoint');
  const temps = [
    b.createConstant('string', [], prefix),
    b.createConstant('string', [names.length], names),
    b.createConstant('string', [names.length], names.map(() => '')), // whole tensors, no slices
  ];
  try {
    const dtypes = {name: 'dtypes', type: 'type', value: names.map((n) => tensors[n].dtype)};
    b.run('SaveV2', [dtypes], [...temps, ...names.map((n) => tensors[n])], 0);
  } finally {
    for (const id of temps) b.free(id);
  }
}

module.exports = {writeCheckpoint};
