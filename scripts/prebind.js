'use strict';
// Binds libtensorflow's references to its own TensorFlow (and Eigen) symbols once, when it is unpacked,
// instead of in every process that loads it: a 64-bit little-endian x86-64 ELF shared library
// is rewritten in place, in plain Node.
//
// Why: TF's libraries export every symbol, so each pointer to one of TF's own functions or
// vtables (a vtable slot, a GOT entry) is a symbolic relocation the dynamic linker resolves
// by name on every load, walking the process's whole symbol scope (node's 74,000 exports
// first). libtensorflow_cc.so.2 of the 2.21.0 wheel has 400,000 of them; looking them up is
// two thirds of its dlopen (140 of 210 ms in a C program, more in node), the largest part of a
// cold start. Where the lookup can only find the library's own definition, its answer is
// known now: the definition's address plus the load base, which is what a relative relocation
// says. Linking the library with -Bsymbolic would have done this; TF's build does not.
//
// A reference is bound here only when the lookup cannot answer anything else:
// - the symbol is defined in this library, in a section (not undefined, absolute or common),
//   as a plain function or object (no IFUNC, whose address a resolver picks at load; no TLS),
//   global or weak; never a GNU unique symbol, which the dynamic linker makes one per process
//   by registering it at its first lookup;
// - its name mentions one of TF's own C++ namespaces (tensorflow, tsl, xla, mlir, llvm, toco,
//   tflite, stream_executor, dnnl) or Eigen's as a component: the entity is in one
//   (`tensorflow::Tensor`), or is a template instantiated with one of their types
//   (`std::function`'s handler of a lambda in a TF kernel, an Eigen evaluator of an XLA
//   expression), or is local to one of their functions (a lambda's typeinfo, a function's
//   static and its guard). Only TF's code defines such a name in a process that loads the
//   addon: no runtime that loads it (node 20-26, Bun, Deno) exports one, and other addons load
//   in scopes of their own. Eigen is header-only, so its names are instantiations in the
//   libraries that use it, and TF's are of its own copy of Eigen (its kernels' functors, such as
//   `Eigen::internal::xdivy_op`, live in Eigen's namespace): 13,400 more of libtensorflow_cc's
//   references, which took its `dlopen` from 72-78 to 55-61 ms in a C program. Names of
//   libraries TF shares with the host's world over their own types keep their lookups, so
//   interposition works for them as before: absl (node 22 and later export absl's names),
//   protobuf, grpc, the C++ standard library, zlib...;
// - no library searched before it defines the name (`earlier`: libtensorflow_framework.so.2
//   for libtensorflow_cc.so.2, which the addon's DT_NEEDED list names first), since the
//   dynamic linker would bind to that one.
// Lazy PLT slots (resolved on first call, one by one) and every other relocation are left
// alone. Anything unexpected (another machine, a layout without the dynamic sections) leaves
// the file untouched.

const fs = require('fs');
const {readAt, cString, elfHeader, sectionHeaders, big, SHT_RELA} = require('./strip_symbols');

const EM_X86_64 = 62;
const ET_DYN = 3;
const SHT_DYNSYM = 11;
const SYM_SIZE = 24;
const RELA_SIZE = 24;
const R_X86_64_64 = 1;
const R_X86_64_GLOB_DAT = 6;
const R_X86_64_RELATIVE = 8;
const STT_OBJECT = 1;
const STT_FUNC = 2;
const STB_GLOBAL = 1;
const STB_WEAK = 2;
const SHN_LORESERVE = 0xff00;

// A component of a mangled C++ name is its length and its text (`10tensorflow`, `4mlir`); a digit
// before the length would make it another, longer component. In libtensorflow_cc of the 2.21.0
// wheel TF's namespaces match 410,827 names; each of the 397,489 that c++filt demangles (the
// others are too long for it) has `tensorflow::`, `mlir::`... in its demangled text.
const BOUND_NAMESPACE_COMPONENT =
  /(?<![0-9])(?:10tensorflow|3tsl|3xla|4mlir|4llvm|4toco|6tflite|15stream_executor|4dnnl|5Eigen)/;

/** Whether the mangled C++ name mentions one of the namespaces bound here (see above). */
function mentionsBoundNamespace(name) {
  return name.startsWith('_Z') && BOUND_NAMESPACE_COMPONENT.test(name);
}

/** The ELF's section headers, each with its name, or a reason the file is left alone. */
function sections(fd) {
  const {header, why} = elfHeader(fd);
  if (why) return {why};
  if (header.readUInt16LE(0x10) !== ET_DYN) return {why: 'not a shared library'};
  if (header.readUInt16LE(0x12) !== EM_X86_64) return {why: 'not an x86-64 library'};
  const list = sectionHeaders(fd, header);
  const names = list[header.readUInt16LE(0x3e)];
  if (!names) return {why: 'extended section numbering'};
  const nameBytes = readAt(fd, names.offset, names.size);
  for (const s of list) s.name = cString(nameBytes, s.nameAt);
  return {list};
}

/** The library's dynamic symbols: the raw table, its string table, and a reader of entry k. */
function dynamicSymbols(fd, list) {
  const dynsym = list.find((s) => s.type === SHT_DYNSYM);
  if (!dynsym || !list[dynsym.link]) return null;
  const table = readAt(fd, dynsym.offset, dynsym.size);
  const strings = readAt(fd, list[dynsym.link].offset, list[dynsym.link].size);
  const at = (k) => ({
    name: cString(strings, table.readUInt32LE(k * SYM_SIZE)),
    info: table[k * SYM_SIZE + 4],
    section: table.readUInt16LE(k * SYM_SIZE + 6),
    value: big(table, k * SYM_SIZE + 8),
  });
  return {count: dynsym.size / SYM_SIZE, at, dynsymIndex: list.indexOf(dynsym)};
}

/** The names `file` defines (its dynamic symbols with a section), for `prebind`'s `earlier`. */
function definedNames(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const {list, why} = sections(fd);
    if (why) throw new Error(`${file}: ${why}`);
    const symbols = dynamicSymbols(fd, list);
    if (!symbols) throw new Error(`${file}: no dynamic symbol table`);
    const names = new Set();
    for (let k = 1; k < symbols.count; k++) {
      const s = symbols.at(k);
      if (s.section !== 0) names.add(s.name);
    }
    return names;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Rewrites `file`'s symbolic relocations that can only bind to its own TF symbols (see above)
 * as relative ones, in place. `earlier`: the names defined by libraries the dynamic linker
 * searches before it. Returns {bound, left} (relocations rewritten, and symbolic ones left to
 * the dynamic linker), or {skipped: reason} when the file is left as it was.
 */
function prebind(file, earlier = new Set()) {
  // Opened for reading: the file is written only once the rewrite is known to be wanted.
  const fd = fs.openSync(file, 'r');
  try {
    const {list, why} = sections(fd);
    if (why) return {skipped: why};
    const symbols = dynamicSymbols(fd, list);
    if (!symbols) return {skipped: 'no dynamic symbol table'};
    const relas = list.filter((s) => s.type === SHT_RELA && s.name === '.rela.dyn' &&
                                     s.link === symbols.dynsymIndex);
    if (relas.length !== 1) return {skipped: 'no .rela.dyn of the dynamic symbols'};
    // Per symbol: 0 not decided yet, 1 bound here, 2 left to the dynamic linker.
    const decided = new Uint8Array(symbols.count);
    const ownAddress = (k) => {
      if (!decided[k]) {
        const s = symbols.at(k);
        const type = s.info & 0xf, binding = s.info >> 4;
        const own = s.section !== 0 && s.section < SHN_LORESERVE &&
            (type === STT_FUNC || type === STT_OBJECT) &&
            (binding === STB_GLOBAL || binding === STB_WEAK) &&
            mentionsBoundNamespace(s.name) && !earlier.has(s.name);
        decided[k] = own ? 1 : 2;
      }
      return decided[k] === 1 ? symbols.at(k).value : null;
    };
    const {offset, size} = relas[0];
    const entries = readAt(fd, offset, size);
    let bound = 0, left = 0;
    for (let at = 0; at + RELA_SIZE <= size; at += RELA_SIZE) {
      const type = entries.readUInt32LE(at + 8);
      if (type !== R_X86_64_64 && type !== R_X86_64_GLOB_DAT) continue;
      const addend = entries.readBigInt64LE(at + 16);
      // GLOB_DAT is S (its addend is 0 as linkers write it); R_X86_64_64 is S + A.
      const value = type === R_X86_64_GLOB_DAT && addend !== 0n ? null :
        ownAddress(entries.readUInt32LE(at + 12));
      if (value === null) {
        left++;
        continue;
      }
      // RELATIVE: the load base plus the addend, here the definition's address plus A.
      entries.writeBigUInt64LE(BigInt(R_X86_64_RELATIVE), at + 8);
      entries.writeBigInt64LE(BigInt(value) + addend, at + 16);
      bound++;
    }
    if (bound) writeAt(file, entries, offset);
    return {bound, left};
  } finally {
    fs.closeSync(fd);
  }
}

function writeAt(file, bytes, position) {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, bytes, 0, bytes.length, position);
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = {prebind, definedNames, mentionsBoundNamespace};
