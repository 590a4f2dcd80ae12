'use strict';
// The GPU package's CUDA libraries (js/libtensorflow_facts.js CUDA_WHEELS): where they lie in a
// package, and whether this machine has an NVIDIA driver to use them with. Shared by the install
// (scripts/libtensorflow.js: fetch them only where a driver is present) and the loader
// (native_loader_core.js: load them by absolute path before TF looks them up by name).

const fs = require('fs');
const path = require('path');
const {CUDA_WHEELS, CUDA_DIR, CUDA_ENV} = require('./libtensorflow_facts');

// Where the driver's user-space library, libcuda.so.1, is installed: the distributions' library
// directories, NVIDIA's container runtime and Kubernetes device plugin, WSL2.
const LIBCUDA_DIRS = [
  '/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib64',
  '/usr/local/nvidia/lib64', '/usr/lib/wsl/lib',
];
// The kernel module's version file: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ...".
const DRIVER_VERSION_FILE = '/proc/driver/nvidia/version';

/** The path of each CUDA library under a package's cuda/ (or a shared copy), in load order. */
function cudaLibraryPaths(dir) {
  return CUDA_WHEELS.flatMap((w) => w.libs.map((lib) => path.join(dir, 'nvidia', w.dir, 'lib', lib)));
}

/** The package's own copy of the CUDA libraries: <root>/cuda. */
function packageCudaDir(root) {
  return path.join(root, CUDA_DIR);
}

/**
 * This machine's NVIDIA driver: { version (e.g. '550.54.15', or null when only libcuda was
 * found), where } or null when there is none (no kernel module, no libcuda.so.1).
 */
function nvidiaDriver({fsImpl = fs, libDirs = LIBCUDA_DIRS, versionFile = DRIVER_VERSION_FILE} = {}) {
  try {
    const text = fsImpl.readFileSync(versionFile, 'utf8');
    const m = /Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)/.exec(text);
    return {version: m ? m[1] : null, where: versionFile};
  } catch {
    // no kernel module here (or a container that does not show /proc/driver)
  }
  for (const dir of libDirs) {
    const file = path.join(dir, 'libcuda.so.1');
    if (fsImpl.existsSync(file)) return {version: null, where: file};
  }
  return null;
}

/**
 * What TFJS_NODE_RS_CUDA asks for: 'force' (1), 'off' (0) or 'auto' (unset); for another value
 * throws makeError(message) (the loader's or the install's kind of error).
 */
function cudaSwitch(env = process.env, makeError = (message) => new Error(message)) {
  const value = env[CUDA_ENV];
  if (value === undefined || value === '') return 'auto';
  if (value === '1') return 'force';
  if (value === '0') return 'off';
  throw makeError(`${CUDA_ENV}=${value} is not understood: use 1 (fetch and load the CUDA libraries), 0 (run on the CPU) or leave it unset`);
}

module.exports = {cudaLibraryPaths, packageCudaDir, nvidiaDriver, cudaSwitch, LIBCUDA_DIRS};
