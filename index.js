'use strict';
// The package's entry: js/index.js, with everything it loads compiled through V8's code cache
// when TFJS_NODE_RS_CODE_CACHE turns that on (js/code_cache.js; off, this is a plain require).
const stopCodeCache = require('./js/code_cache').cacheModulesLoadedNow(__dirname);
try {
  module.exports = require('./js');
} finally {
  stopCodeCache();
}
