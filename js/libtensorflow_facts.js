'use strict';
// What both the set-up script (scripts/libtensorflow.js) and the loader (native_loader_core.js)
// must agree on about libtensorflow, written once.

/**
 * Per OS (process.platform): the libraries the addon links, named as in deps/lib/, the wheel's
 * folder that holds them, and the name of the link to the first that pkg-config's
 * `-ltensorflow` finds (written by the install beside them). Windows has one library, the
 * tensorflow-cpu wheel's Python extension DLL that holds the whole C API, and no link: a file
 * symlink needs privileges there, and the addon is linked against an import library made at
 * build time (scripts/build.js), not through deps/.
 */
const LIBRARIES = {
  linux: {libs: ['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2'], wheelDir: 'tensorflow', linkName: 'libtensorflow.so'},
  darwin: {libs: ['libtensorflow_cc.2.dylib', 'libtensorflow_framework.2.dylib'], wheelDir: 'tensorflow', linkName: 'libtensorflow.dylib'},
  win32: {libs: ['_pywrap_tensorflow_common.dll'], wheelDir: 'tensorflow/python', linkName: null},
};

const PRELOAD_BINARY = 'tfjs-node-rs-preload';

/** LIBRARIES' entry for OS `os` ('linux', 'darwin'); Linux's for any other. */
function librariesOf(os) {
  return Object.hasOwn(LIBRARIES, os) ? LIBRARIES[os] : LIBRARIES.linux;
}

module.exports = {
  /** The TensorFlow release the addon is built against and the install provides. */
  TF_VERSION: '2.21.0',
  /** Every Linux wheel is a manylinux_2_27 build. */
  MIN_GLIBC: [2, 27],
  /**
   * The oldest macOS the macosx_12_0_arm64 wheel's libraries run on; the macOS addon is built
   * for it too (MACOSX_DEPLOYMENT_TARGET, scripts/build.js).
   */
  MIN_MACOS: '12.0',
  /**
   * The machines with a prebuilt addon, by `${process.platform}-${process.arch}`: the Rust target
   * it is built for, napi-rs's name for the platform (which names the per-platform package,
   * tfjs-node-rs-<napi>, and the addon file, tfjs-node-rs.<napi>.node), and how errors name it.
   */
  ADDON_PLATFORMS: {
    'linux-x64': {rustTarget: 'x86_64-unknown-linux-gnu', napi: 'linux-x64-gnu', describe: 'Linux x64 with glibc >= 2.27'},
    'linux-arm64': {rustTarget: 'aarch64-unknown-linux-gnu', napi: 'linux-arm64-gnu', describe: 'Linux arm64 with glibc >= 2.27'},
    'darwin-arm64': {rustTarget: 'aarch64-apple-darwin', napi: 'darwin-arm64', describe: 'macOS 12 or newer on Apple silicon'},
    // Built with the GNU toolchain (no MSVC linker here): the addon talks to node only through
    // N-API, looked up in node.exe at load, so it loads into the official MSVC-built Node.js,
    // whose napi-rs loader (binding.js) looks for the -msvc name.
    'win32-x64': {rustTarget: 'x86_64-pc-windows-gnu', napi: 'win32-x64-msvc', describe: 'Windows 10 or newer on x64'},
  },
  /**
   * The small addon beside the main one that loads it on a native thread (preload/): its cargo
   * package, and its file for napi platform `napi`; built for every platform but Windows.
   */
  PRELOAD_BINARY,
  preloadFile: (napi) => `${PRELOAD_BINARY}.${napi}.node`,
  /** Machines users ask about that TensorFlow 2.21 has no build for: why, and what to do. */
  UNSUPPORTED_NOTES: {
    'darwin-x64': 'TensorFlow publishes no macOS x64 build of 2.21; on an Apple-silicon Mac, run the arm64 Node.js rather than one under Rosetta',
    'win32-arm64': 'TensorFlow publishes no Windows on ARM build of 2.21',
    'win32-ia32': 'TensorFlow has no 32-bit builds',
    'linux-arm': 'TensorFlow has no 32-bit ARM builds; use a 64-bit (arm64) OS',
  },
  LIBRARIES,
  librariesOf,
  /** The two libraries the addon links, on this machine's OS. */
  LIBS: librariesOf(process.platform).libs,
  /** A directory holding LIBS to use instead of the wheel's (linked, not copied). */
  ENV_DIR: 'TFJS_NODE_RS_LIBTENSORFLOW',
  /** At install time: copy the libraries into the project instead of linking the shared copy. */
  COPY_ENV: 'TFJS_NODE_RS_COPY_LIBTENSORFLOW',

  /** The NVIDIA GPU package (the drop-in for @tensorflow/tfjs-node-gpu); Linux x64 only. */
  GPU_PACKAGE: 'tfjs-node-rs-gpu',
  /**
   * The CUDA libraries the GPU build of libtensorflow opens by name, from PyPI's nvidia-*-cu12
   * wheels: the lower bounds of TF 2.21's `and-cuda` extra (CUDA 12.5, cuDNN 9.3: what it was
   * built against). Each wheel holds nvidia/<dir>/lib/<libs>, unpacked in that layout (the
   * libraries' own RUNPATHs name their siblings as $ORIGIN/../../<dir>/lib). In load order,
   * each library after the ones it needs (nvJitLink before cuSPARSE and cuFFT, cuBLAS and
   * cuSPARSE before cuSOLVER, cudnn_graph before the other cuDNN parts); MB: the wheel's size.
   * Left out of TF's extra: nccl (multi-GPU collectives, 308 MB), cuda-cupti (the profiler),
   * cuda-nvcc (ptxas, for XLA), curand (TF has its own random kernels).
   */
  CUDA_WHEELS: [
    {project: 'nvidia-nvjitlink-cu12', version: '12.5.82', dir: 'nvjitlink', MB: 20, libs: ['libnvJitLink.so.12']},
    {project: 'nvidia-cuda-runtime-cu12', version: '12.5.82', dir: 'cuda_runtime', MB: 1, libs: ['libcudart.so.12']},
    {project: 'nvidia-cublas-cu12', version: '12.5.3.2', dir: 'cublas', MB: 346, libs: ['libcublasLt.so.12', 'libcublas.so.12']},
    {project: 'nvidia-cusparse-cu12', version: '12.5.1.3', dir: 'cusparse', MB: 207, libs: ['libcusparse.so.12']},
    {project: 'nvidia-cusolver-cu12', version: '11.6.3.83', dir: 'cusolver', MB: 124, libs: ['libcusolver.so.11']},
    {project: 'nvidia-cufft-cu12', version: '11.2.3.61', dir: 'cufft', MB: 184, libs: ['libcufft.so.11']},
    {project: 'nvidia-cuda-nvrtc-cu12', version: '12.5.82', dir: 'cuda_nvrtc', MB: 24, libs: ['libnvrtc-builtins.so.12.5', 'libnvrtc.so.12']},
    {
      project: 'nvidia-cudnn-cu12', version: '9.3.0.75', dir: 'cudnn', MB: 550,
      libs: [
        'libcudnn_graph.so.9', 'libcudnn_ops.so.9', 'libcudnn_cnn.so.9', 'libcudnn_adv.so.9',
        'libcudnn_engines_precompiled.so.9', 'libcudnn_engines_runtime_compiled.so.9',
        'libcudnn_heuristic.so.9', 'libcudnn.so.9',
      ],
    },
  ],
  /**
   * The oldest NVIDIA driver the CUDA 12 libraries run on (CUDA 12.x minor-version
   * compatibility; CUDA 12.5 Update 1's own driver is 555.42.06).
   */
  MIN_DRIVER: '525.60.13',
  /** Where a GPU package keeps its CUDA libraries (a link to the shared copy): <root>/cuda/nvidia/<dir>/lib. */
  CUDA_DIR: 'cuda',
  /**
   * The CUDA libraries' switch: unset = at install, fetch them when an NVIDIA driver is present;
   * `1` = fetch them anyway; `0` = neither fetch nor load them (run on the CPU).
   */
  CUDA_ENV: 'TFJS_NODE_RS_CUDA',
};
