// Builds dist/ from the TypeScript sources with esbuild:
//   - dist/main.cjs: the `fathom` program, one CommonJS bundle that bin/program.cjs loads
//     through vm.Script with V8's code cache (Node 20 caches compiled code for nothing else);
//   - ES modules for the worker threads and the explorer's ink UI (ink is an ES module with
//     top-level await), with shared chunks;
//   - dist/main.cjs.cache: the code cache, from a warm-up run of the common commands;
//   - dist/dashboard/: the web page `fathom serve` serves on / (dashboard/build.mjs).
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { buildDashboard } from '../dashboard/build.mjs';

// Pure-JS packages on the program's paths are bundled in: resolving and compiling them
// separately costs more at start-up than their code does. Everything else (native addons,
// packages that only one command loads) stays external and is required at run time.
const BUNDLED = new Set(['commander', 'chalk', 'cli-progress']);
const externals = {
  name: 'externals',
  setup(b) {
    b.onResolve({ filter: /^[^./#]/ }, (args) => {
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      if (args.path.startsWith('node:') || !BUNDLED.has(name)) return { path: args.path, external: true };
      return undefined;
    });
  },
};
// In the CommonJS program, the explorer UI is reached through __fathomImport (see
// commands/explore.tsx); its `import()` fallback is for running from source.
const esmOnly = {
  name: 'esm-only',
  setup(b) {
    b.onResolve({ filter: /^\.\/explore\/run\.js$/ }, () => ({ path: 'explore-run', namespace: 'esm-only' }));
    b.onLoad({ filter: /.*/, namespace: 'esm-only' }, () => ({ contents: "throw new Error('the explorer UI is an ES module: load it with __fathomImport');", loader: 'js' }));
  },
};

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// Build beside dist/ and swap it in, so a running `fathom` never sees a half-built tree.
const tmp = path.join(root, `dist.tmp-${process.pid}`);
rmSync(tmp, { recursive: true, force: true });
const common = { absWorkingDir: root, outdir: tmp, bundle: true, platform: 'node', target: 'node20', sourcemap: 'linked', jsx: 'automatic', logLevel: 'warning' };
await build({
  ...common,
  entryPoints: { 'merge-worker': 'src/index/merge-worker.ts', 'prepare-worker': 'src/io/prepare-worker.ts', 'import-thread': 'src/server/import-thread.ts', 'image-worker': 'src/embed/image/image-worker.ts', 'inference-worker': 'src/embed/inference-worker.ts', 'explore/run': 'commands/explore/run.tsx' },
  splitting: true,
  format: 'esm',
  plugins: [externals],
  // commander is CommonJS: its require() of Node built-ins needs a real require in ESM output.
  banner: { js: "import { createRequire as __fathomRequire } from 'node:module'; const require = __fathomRequire(import.meta.url);" },
  chunkNames: '[name]-[hash]',
});
const cjs = await build({
  ...common,
  metafile: true,
  entryPoints: { main: 'bin/main.mts' },
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  plugins: [esmOnly, externals],
  define: { 'import.meta.url': '__fathomUrl' },
  banner: { js: "'use strict'; const __fathomUrl = require('node:url').pathToFileURL(__filename).href;" },
});
// import() cannot run inside vm.Script (bin/program.cjs) without an experimental flag.
for (const out of Object.values(cjs.metafile.outputs)) {
  for (const i of out.imports) if (i.kind === 'dynamic-import') throw new Error(`dist/main.cjs must not import() ${i.path}: bundle it, require it, or load it through __fathomImport`);
}
await buildDashboard(path.join(tmp, 'dashboard'));
const mainFile = path.join(tmp, 'main.cjs');
const { withBuildId } = createRequire(import.meta.url)('./program.cjs');
writeFileSync(mainFile, withBuildId(readFileSync(mainFile, 'utf8')));

const old = path.join(root, `dist.old-${process.pid}`);
try {
  renameSync(path.join(root, 'dist'), old);
} catch {
  /* first build */
}
renameSync(tmp, path.join(root, 'dist'));
rmSync(old, { recursive: true, force: true });

// The code cache: a child process runs the common commands on a throw-away directory. It
// runs on the final dist/, as V8 keeps the script's path in the cache (for stack traces).
const warm = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.join(root, 'bin', 'warm-cache.cjs'))}).warmCache(${JSON.stringify(path.join(root, 'dist'))})`], {
  stdio: ['ignore', 'ignore', 'pipe'],
  encoding: 'utf8',
});
if (warm.status !== 0) process.stderr.write(`warning: no code cache for dist/main.cjs (fathom starts slower): ${(warm.stderr || '').trim().split('\n').pop()}\n`);
