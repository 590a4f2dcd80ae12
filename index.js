'use strict';
// The package's entry: js/index.js, with everything it loads compiled from V8's code cache when
// an earlier process made one (js/code_cache.js).
const stopCodeCache = require('./js/code_cache').cacheModulesLoadedNow(__dirname);
try {
  module.exports = require('./js');
} finally {
  stopCodeCache();
}
