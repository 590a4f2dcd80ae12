'use strict';
// tfjs-core exports this package replaces (dropout.js, trust.js). tfjs-layers and
// `@tensorflow/tfjs` read them through tfjs-core's exports object on every call, so a
// replacement there is what they call.

const tfc = require('@tensorflow/tfjs-core');

/**
 * Makes tfjs-core export `fn` as `name`. A build of tfjs-core whose exports cannot be
 * redefined (an ES-module namespace: tfjs-core's own test suite loads one) keeps its own.
 */
function replaceExport(name, fn) {
  const exported = Object.getOwnPropertyDescriptor(tfc, name);
  if (exported !== undefined && exported.configurable) {
    Object.defineProperty(tfc, name, {value: fn, writable: true, enumerable: true,
                                      configurable: true});
  } else if (exported !== undefined && exported.writable) {
    tfc[name] = fn;
  }
}

module.exports = {replaceExport};
