'use strict';
// The native addon, loaded through js/native_loader.js (which checks the platform, N-API and
// libtensorflow first and explains any failure). Only the backend core (tensorflow_backend.js)
// runs ops through it.
module.exports = require('../native_loader');
