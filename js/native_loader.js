'use strict';
// The native addon, loaded once through the napi-generated binding.js, with
// clear errors for an unsupported platform or libc, a Node.js whose N-API is too
// old, a missing addon or libtensorflow, and a libtensorflow of the wrong major
// version. Sets TF_CPP_MIN_LOG_LEVEL=2 (unless set) before loading.
// The checks live in native_loader_core.js (unit-tested with injected failures).

module.exports = require('./native_loader_core').load();
