'use strict';
// A reader of what the Windows build needs from PE files (DLLs): the machine, the names a DLL
// exports and the names it imports from each DLL. It reads the headers and the two tables
// through a file descriptor, so the 1.06 GB _pywrap_tensorflow_common.dll is never read whole
// (objdump -p prints 15 M lines of it in ~10 s; this takes well under a second).

const fs = require('fs');

const MACHINE_AMD64 = 0x8664;
const PE32_PLUS = 0x20b;
const PAGE = 64 * 1024;

function peError(file, what) {
  return new Error(`${file} is not a readable PE file: ${what}`);
}

/**
 * Reads the PE file `file`: {machine, exports: [names], imports: {dll: [names]}}; imports by
 * ordinal are listed as '#<ordinal>'. Throws for a file that is not a 64-bit PE image.
 */
function readPe(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const pages = new Map();
    // Bytes [pos, pos + len) through a cache of 64 KiB pages (the tables' strings are scattered).
    const read = (pos, len) => {
      if (pos < 0 || pos + len > size) throw peError(file, `offset ${pos} lies past its end`);
      const out = Buffer.alloc(len);
      for (let done = 0; done < len;) {
        const at = pos + done;
        const base = at - (at % PAGE);
        let page = pages.get(base);
        if (!page) {
          page = Buffer.alloc(Math.min(PAGE, size - base));
          fs.readSync(fd, page, 0, page.length, base);
          pages.set(base, page);
        }
        done += page.copy(out, done, at - base, Math.min(page.length, at - base + len - done));
      }
      return out;
    };
    if (read(0, 2).toString('latin1') !== 'MZ') throw peError(file, 'no MZ header');
    const pe = read(0x3c, 4).readUInt32LE(0);
    if (read(pe, 4).toString('latin1') !== 'PE\0\0') throw peError(file, 'no PE signature');
    const coff = read(pe + 4, 20);
    const machine = coff.readUInt16LE(0);
    const sectionCount = coff.readUInt16LE(2);
    const optSize = coff.readUInt16LE(16);
    const opt = read(pe + 24, optSize);
    if (opt.readUInt16LE(0) !== PE32_PLUS) throw peError(file, 'not a 64-bit (PE32+) image');
    const dirCount = opt.readUInt32LE(108);
    const dir = (i) => (i < dirCount ? {rva: opt.readUInt32LE(112 + 8 * i), size: opt.readUInt32LE(116 + 8 * i)} : {rva: 0, size: 0});
    const sections = [];
    const table = read(pe + 24 + optSize, 40 * sectionCount);
    for (let i = 0; i < sectionCount; i++) {
      const s = 40 * i;
      sections.push({
        va: table.readUInt32LE(s + 12),
        span: Math.max(table.readUInt32LE(s + 8), table.readUInt32LE(s + 16)),
        raw: table.readUInt32LE(s + 20),
      });
    }
    const offsetOf = (rva) => {
      const s = sections.find((x) => rva >= x.va && rva < x.va + x.span);
      if (!s) throw peError(file, `address 0x${rva.toString(16)} is in no section`);
      return s.raw + rva - s.va;
    };
    const cString = (rva) => {
      let text = '';
      for (let pos = offsetOf(rva); ; pos += 256) {
        const chunk = read(pos, Math.min(256, size - pos));
        const end = chunk.indexOf(0);
        text += chunk.toString('latin1', 0, end < 0 ? chunk.length : end);
        if (end >= 0 || chunk.length < 256) return text;
      }
    };

    const exports = [];
    const exp = dir(0);
    if (exp.rva) {
      const header = read(offsetOf(exp.rva), 40);
      const count = header.readUInt32LE(24);
      const names = read(offsetOf(header.readUInt32LE(32)), 4 * count);
      for (let i = 0; i < count; i++) exports.push(cString(names.readUInt32LE(4 * i)));
    }

    const imports = {};
    const imp = dir(1);
    for (let at = imp.rva; imp.rva; at += 20) {
      const d = read(offsetOf(at), 20);
      const nameRva = d.readUInt32LE(12);
      if (!nameRva) break;
      const names = [];
      // The lookup table (OriginalFirstThunk), or the address table where a linker left none.
      let thunk = d.readUInt32LE(0) || d.readUInt32LE(16);
      for (; ; thunk += 8) {
        const entry = read(offsetOf(thunk), 8).readBigUInt64LE(0);
        if (entry === 0n) break;
        if (entry >> 63n) names.push(`#${Number(entry & 0xffffn)}`);
        else names.push(cString(Number(entry & 0x7fffffffn) + 2)); // past the 2-byte hint
      }
      imports[cString(nameRva)] = names;
    }
    return {machine, exports, imports};
  } finally {
    fs.closeSync(fd);
  }
}

/** The names `imports` (readPe's) takes from DLL `dll`, which Windows matches case-insensitively. */
function importsFrom(imports, dll) {
  const key = Object.keys(imports).find((k) => k.toLowerCase() === dll.toLowerCase());
  return key ? imports[key] : [];
}

module.exports = {readPe, importsFrom, MACHINE_AMD64};
