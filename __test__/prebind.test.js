'use strict';
// scripts/prebind.js: a library's references to its own TF symbols bound when it is unpacked.
// Libraries built here with the C++ compiler stand in for the addon and TF's two libraries; a
// C++ program loads them as node loads the addon and compares what each reference points to
// with what the dynamic linker looks up by name, before and after the rewrite.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const {prebind, definedNames, mentionsBoundNamespace} = require('../scripts/prebind.js');
const {scratchDirs} = require('./support/scratch.js');

const tempDir = scratchDirs('tfjs-node-rs-prebind-');
const haveCompiler = spawnSync('c++', ['--version']).status === 0;
const haveReadelf = spawnSync('readelf', ['--version']).status === 0;
const onX64Linux = process.platform === 'linux' && process.arch === 'x64';
const needs = {skip: !onX64Linux ? 'x86-64 Linux only' : !haveCompiler ? 'no C++ compiler (c++)' :
  !haveReadelf && 'no readelf'};

// The framework: defines a name the second library defines too.
const FIRST = 'namespace tensorflow { int twice = 1; }\n';
// libtensorflow_cc's part: its own names, a name the first library defines, an Eigen template's
// instance, a name of a namespace shared with the world (absl), a template of that namespace
// instantiated with one of TF's types, a GNU unique symbol (a template's static member), a vtable, and a table of
// pointers to each (symbolic relocations).
const SECOND = `
namespace tensorflow {
int own = 2;
int twice = 3;
int own_function() { return 4; }
struct Base { virtual int f() const; virtual ~Base(); };
int Base::f() const { return 5; }
Base::~Base() {}
Base* make() { return new Base(); }
template <class T> struct Registry { static int count; };
template <class T> int Registry<T>::count = 6;
template struct Registry<int>;
}
namespace Eigen {
template <class T> int rows() { return 8; }
template int rows<int>();
}
namespace absl {
int shared_name = 7;
template <class T> int size_of() { return sizeof(T); }
template int size_of<tensorflow::Base>();
}
extern "C" void* table[] = {
  &tensorflow::own, &tensorflow::twice, reinterpret_cast<void*>(&tensorflow::own_function),
  &absl::shared_name, &tensorflow::Registry<int>::count,
  reinterpret_cast<void*>(&absl::size_of<tensorflow::Base>),
  reinterpret_cast<void*>(&Eigen::rows<int>),
};
`;
const NAMES = ['_ZN10tensorflow3ownE', '_ZN10tensorflow5twiceE', '_ZN10tensorflow12own_functionEv',
               '_ZN4absl11shared_nameE', '_ZN10tensorflow8RegistryIiE5countE',
               '_ZN4absl7size_ofIN10tensorflow4BaseEEEiv', '_ZN5Eigen4rowsIiEEiv'];
// Loads the root (which needs first, then second, as the addon needs the framework, then cc)
// and prints, for each table entry, whether it holds what a lookup of its name gives.
const CHECK = `
#include <dlfcn.h>
#include <cstdio>
int main(int argc, char** argv) {
  void* root = dlopen(argv[1], RTLD_LAZY);
  if (!root) { std::printf("%s\\n", dlerror()); return 1; }
  void** table = static_cast<void**>(dlsym(root, "table"));
  for (int i = 2; i < argc; i++) std::printf("%s %s\\n", argv[i], table[i - 2] == dlsym(root, argv[i]) ? "same" : "differs");
  return 0;
}
`;

function compile(dir, name, source, args) {
  fs.writeFileSync(path.join(dir, `${name}.cc`), source);
  const run = spawnSync('c++', [path.join(dir, `${name}.cc`), '-o', path.join(dir, name), '-O1', ...args],
                        {encoding: 'utf8'});
  assert.equal(run.status, 0, run.stderr);
  return path.join(dir, name);
}

/** The symbol names of `file`'s R_X86_64_64 and GLOB_DAT relocations (readelf's view). */
function symbolicReferences(file) {
  const out = spawnSync('readelf', ['-rW', file], {encoding: 'utf8'});
  assert.equal(out.status, 0, out.stderr);
  return new Set([...out.stdout.matchAll(/R_X86_64_(?:64|GLOB_DAT)\s+\S+\s+(\S+)/g)].map((m) => m[1]));
}

test('mentionsBoundNamespace finds TF\'s and Eigen\'s namespaces anywhere in mangled names', () => {
  assert.ok(mentionsBoundNamespace('_ZN10tensorflow6TensorC1Ev'));
  assert.ok(mentionsBoundNamespace('_ZNK4mlir9Operation4nameEv'));
  assert.ok(mentionsBoundNamespace('_ZTVN3xla9HloModuleE'));
  assert.ok(mentionsBoundNamespace('_ZTIN3tsl6StatusE'));
  // A static of a TF function, and its guard variable.
  assert.ok(mentionsBoundNamespace('_ZZN10tensorflow1fEvE1c'));
  assert.ok(mentionsBoundNamespace('_ZGVZN10tensorflow1fEvE1c'));
  // std::vector<tensorflow::Tensor>'s method: a template of the world over one of TF's types.
  assert.ok(mentionsBoundNamespace('_ZNSt6vectorIN10tensorflow6TensorESaIS1_EE9push_backERKS1_'));
  // Eigen's: a functor TF defines in Eigen's namespace, and std::function's handler of a lambda
  // in an Eigen template.
  assert.ok(mentionsBoundNamespace('_ZN5Eigen8internal8xdivy_opIfEclERKfS4_'));
  assert.ok(mentionsBoundNamespace('_ZNSt17_Function_handlerIFvllEZN5Eigen8internal3runEvEUlllE_E9_M_invokeERKSt9_Any_dataOlSA_'));
  // The world's own names, and a component that only ends in TF's letters (length 110).
  assert.ok(!mentionsBoundNamespace('_ZNSt6vectorIiSaIiEE9push_backERKi'));
  assert.ok(!mentionsBoundNamespace('_ZN4absl6StatusC1Ev'));
  assert.ok(!mentionsBoundNamespace('_ZN4absl12lts_202508146StatusC1Ev'));
  assert.ok(!mentionsBoundNamespace(`_ZN15Eigen${'x'.repeat(10)}E`));
  assert.ok(!mentionsBoundNamespace(`_ZN110tensorflow${'x'.repeat(100)}E`));
  assert.ok(!mentionsBoundNamespace('TF_NewTensor'));
  assert.ok(!mentionsBoundNamespace('tensorflow_10tensorflow'));
});

test('prebind binds only what the lookup could only find in the library itself', needs, () => {
  const dir = tempDir('libs');
  const pic = ['-shared', '-fPIC'];
  const first = compile(dir, 'libfirst.so', FIRST, pic);
  const second = compile(dir, 'libsecond.so', SECOND, pic);
  const root = compile(dir, 'libroot.so', 'extern "C" int root() { return 0; }\n',
                       [...pic, `-L${dir}`, '-Wl,--no-as-needed', '-lfirst', '-lsecond', `-Wl,-rpath,${dir}`]);
  const check = compile(dir, 'check', CHECK, ['-ldl']);
  const looked = () => {
    const run = spawnSync(check, [root, ...NAMES], {encoding: 'utf8'});
    assert.equal(run.status, 0, run.stdout + run.stderr);
    return run.stdout;
  };
  const before = looked();
  assert.doesNotMatch(before, /differs/);

  const r = prebind(second, definedNames(first));
  // own, own_function, and Base's vtable slots and typeinfo: at least the two table entries.
  assert.ok(r.bound >= 2, JSON.stringify(r));
  assert.equal(looked(), before); // every reference points where the lookup points
  const left = symbolicReferences(second);
  for (const kept of ['_ZN10tensorflow5twiceE', '_ZN4absl11shared_nameE',
                      '_ZN10tensorflow8RegistryIiE5countE']) {
    assert.ok(left.has(kept), `${kept} is still looked up`);
  }
  for (const bound of ['_ZN10tensorflow3ownE', '_ZN10tensorflow12own_functionEv',
                       '_ZN4absl7size_ofIN10tensorflow4BaseEEEiv', '_ZN5Eigen4rowsIiEEiv']) {
    assert.ok(!left.has(bound), `${bound} is bound`);
  }
  // A second run finds nothing more to bind.
  assert.deepEqual(prebind(second, definedNames(first)), {bound: 0, left: r.left});
});

test('prebind leaves files that are not x86-64 ELF libraries alone', needs, () => {
  const dir = tempDir('other');
  const text = path.join(dir, 'text');
  fs.writeFileSync(text, 'not an ELF file '.repeat(10));
  assert.match(prebind(text).skipped, /not .*ELF/);
  assert.equal(fs.readFileSync(text, 'utf8'), 'not an ELF file '.repeat(10));
  // The library above, marked as an arm64 one.
  const lib = compile(dir, 'libsecond.so', SECOND, ['-shared', '-fPIC']);
  const bytes = fs.readFileSync(lib);
  bytes.writeUInt16LE(183, 0x12);
  fs.writeFileSync(lib, bytes);
  assert.deepEqual(prebind(lib), {skipped: 'not an x86-64 library'});
  assert.ok(fs.readFileSync(lib).equals(bytes));
});
