'use strict';
// TF's error messages as tfjs words them. TF and tfjs mostly share messages
// (tfjs's kernels were ported from TF's); where the wording differs, tfjs's
// is what tfjs users and tests expect.

/** [op name or '*', pattern, replacement] */
const REWRITES = [
  ['*', /possibly because 'segment_ids' input is not sorted/,
   'possibly because segmentIds input is not sorted'],
  ['RaggedGather', /^Ragged splits must be sorted$/,
   'Ragged splits must be sorted in ascending order'],
  // TF compares the row as unsigned, so a negative one reads as too large.
  ['SparseFillEmptyRows', /^indices\((\d+), 0\) is invalid: (-\d+) >= \d+$/,
   'indices($1, 0) is invalid: $2 < 0'],
];

/**
 * Returns TF's error for tfjs: the binding's `<Op>: ` prefix dropped, the
 * wording tfjs uses, `e.op` set to the op. `e.code` stays TF's code.
 */
function tfError(e, opName) {
  if (!e || typeof e.message !== 'string') return e;
  let message = e.message;
  const prefix = opName + ': ';
  if (message.startsWith(prefix)) message = message.slice(prefix.length);
  for (const [op, pattern, replacement] of REWRITES) {
    if ((op === '*' || op === opName) && pattern.test(message)) {
      message = message.replace(pattern, replacement);
    }
  }
  if (message !== e.message) {
    if (typeof e.stack === 'string') e.stack = e.stack.replace(e.message, message);
    e.message = message;
  }
  e.op = opName;
  return e;
}

/**
 * An Error whose message is tfjs-node's exact text (its specs and users' code match it whole),
 * with what more there is to say in `e.detail`, which Node prints with the error.
 */
function errorWithDetail(message, detail) {
  const e = new Error(message);
  e.detail = detail;
  return e;
}

module.exports = {errorWithDetail, tfError};
