'use strict';
// Whole calls as TF graphs: see call_graphs.js. Installed once, with the backend.

const {installDropout} = require('./dropout');
const {installModelGraphs, graphFunction} = require('./models');
const {stats} = require('./call_graphs');
const {watchRandomOps} = require('./trust');

let installed = false;

function installGraphs() {
  if (installed) return;
  installed = true;
  installDropout();
  watchRandomOps();
  installModelGraphs();
}

/** `tf.node.callGraphStats()`: counters of whole-call graphs in this process. */
function callGraphStats() {
  return {...stats};
}

module.exports = {installGraphs, graphFunction, callGraphStats};
