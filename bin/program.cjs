// Loads the compiled program (dist/main.cjs) with V8's code cache.
//
// A cold `fathom search` spends a good part of its life compiling JavaScript: every
// function the command runs is parsed and compiled again in each new process. V8 can save
// the compiled code of a script and take it back later; Node 20 offers that only for
// scripts it is handed through `vm.Script` (its module loaders keep no cache before Node
// 22). So the program is one CommonJS bundle, and this loader compiles it through
// vm.Script with the cache in dist/main.cjs.cache:
//
//   dist/main.cjs ──read──▶ vm.Script(source, cachedData) ──run──▶ main(argv)
//   dist/main.cjs.cache ─┘        │ no cache, or V8 rejected it (another Node version)
//                                 └─▶ after the command: script.createCachedData() ─▶ cache
//
// The cache is written after a command has run, so it holds the functions that command
// compiled, not only the top level. `npm install` builds it with a warm-up run of the
// common commands (bin/build.mjs, bin/warm-cache.cjs). The cache file starts with the build id
// of the bundle it belongs to: V8 checks only the source length, so a cache left over from
// another build of the same length must never be used. Writing it is best effort
// (a read-only install simply runs without one).
//
// The bundle gets `__fathomImport` for the one ES module it loads (the explorer's ink UI
// uses top-level await, so it cannot be required); `import()` itself does not work inside
// vm.Script without an experimental flag. This loader and bin/fathom.js are CommonJS
// (bin/package.json): an ES module entry point costs Node ~10 ms more to start.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

const BUILD_ID = '// fathom-build-id: ';

/**
 * Two settings that take ~7 ms off every start, set only when the user has not set them:
 * - LIBC: lmdb finds its prebuilt binary with node-gyp-build-optional-packages, which asks
 *   detect-libc for the C library, and detect-libc loads child_process before it looks.
 *   Its first test is the ELF interpreter of the running node binary (ld-musl or
 *   ld-linux); the same test here reads the first 4 KB of /proc/self/exe. When it says
 *   nothing, LIBC stays unset and detect-libc runs as before.
 * - MSGPACKR_NATIVE_ACCELERATION_DISABLED: msgpackr's native string decoder is a second
 *   addon to locate and load. Fathom keeps only small records in msgpack (documents have
 *   their own encoding, src/storage/doctext.ts), where the plain JS decoder is as fast.
 */
function tuneNativeLoading() {
  if (process.env.LIBC === undefined && process.platform === 'linux') {
    const libc = libcOfInterpreter();
    if (libc) process.env.LIBC = libc;
  }
  process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED ??= 'true';
}

/** 'musl' or 'glibc' from the PT_INTERP header of a 64-bit little-endian ELF node binary. */
function libcOfInterpreter() {
  let fd;
  try {
    fd = fs.openSync('/proc/self/exe', 'r');
    const elf = Buffer.alloc(4096);
    const n = fs.readSync(fd, elf, 0, elf.length, 0);
    if (n < 64 || elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) return undefined;
    const at = Number(elf.readBigUInt64LE(32));
    const size = elf.readUInt16LE(54);
    const count = elf.readUInt16LE(56);
    for (let i = 0; i < count; i++) {
      const h = at + i * size;
      if (h + 40 > n) return undefined;
      if (elf.readUInt32LE(h) !== 3) continue; // PT_INTERP
      const from = Number(elf.readBigUInt64LE(h + 8));
      const len = Number(elf.readBigUInt64LE(h + 32));
      if (from + len > n) return undefined;
      const interp = elf.toString('latin1', from, from + len);
      return interp.includes('/ld-musl-') ? 'musl' : interp.includes('/ld-linux-') ? 'glibc' : undefined;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** The bundle's build id: its last line, written by withBuildId ('' when there is none). */
function buildId(source) {
  const at = source.lastIndexOf(BUILD_ID);
  return at < 0 ? '' : source.slice(at + BUILD_ID.length).trim();
}

/** The bundle with its build id (a hash of its text) appended as the last line; for bin/build.mjs. */
function withBuildId(source) {
  const id = require('node:crypto').createHash('sha256').update(source).digest('hex').slice(0, 24);
  return `${source}${BUILD_ID}${id}\n`;
}

/**
 * Compiles and runs dist/main.cjs (or `distDir`/main.cjs). Returns its `main` and
 * `saveCache`, which writes the code cache when the run did not use a valid one.
 */
function loadProgram(distDir = path.join(__dirname, '..', 'dist')) {
  tuneNativeLoading();
  const file = path.join(distDir, 'main.cjs');
  const cacheFile = file + '.cache';
  const source = fs.readFileSync(file, 'utf8');
  const id = buildId(source);
  let cached;
  try {
    const raw = fs.readFileSync(cacheFile);
    const nl = raw.indexOf(10);
    if (id && nl > 0 && raw.toString('latin1', 0, nl) === id) cached = raw.subarray(nl + 1);
  } catch {
    /* no cache yet */
  }
  // One line, so positions in stack traces match the file.
  const wrapper = `(function (exports, require, module, __filename, __dirname, __fathomImport) {${source}\n})`;
  const script = new vm.Script(wrapper, { filename: file, cachedData: cached });
  const fresh = cached === undefined || script.cachedDataRejected === true;
  const mod = { exports: {} };
  const importEsm = (spec) => import(new URL(spec, pathToFileURL(file)).href);
  script.runInThisContext()(mod.exports, createRequire(file), mod, file, distDir, importEsm);
  return {
    main: mod.exports.main,
    usedCache: !fresh,
    /** Writes the code cache if this run compiled without one (best effort). */
    saveCache(force = false) {
      if (!id || (!fresh && !force)) return false;
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        fs.writeFileSync(tmp, Buffer.concat([Buffer.from(id + '\n', 'latin1'), script.createCachedData()]));
        fs.renameSync(tmp, cacheFile);
        return true;
      } catch {
        try {
          fs.rmSync(tmp, { force: true });
        } catch {
          /* nothing to remove */
        }
        return false;
      }
    },
  };
}

module.exports = { buildId, loadProgram, withBuildId };
