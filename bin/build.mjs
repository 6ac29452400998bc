// Builds dist/ from the TypeScript sources with esbuild: one ESM bundle per entry, with
// shared chunks, so `fathom` starts by loading only the code its subcommand needs.
import { build } from 'esbuild';
import { renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

// Pure-JS packages on every command's cold path are bundled in: resolving and compiling
// them as separate ES modules costs more at start-up than their code does. Everything
// else (native addons, packages loaded lazily by one command) stays an external import.
const BUNDLED = new Set(['commander', 'chalk']);
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

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// Build beside dist/ and swap it in, so a running `fathom` never sees a half-built tree.
const tmp = path.join(root, `dist.tmp-${process.pid}`);
rmSync(tmp, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: 'bin/main.ts', 'merge-worker': 'src/index/merge-worker.ts', 'prepare-worker': 'src/io/prepare-worker.ts', 'import-thread': 'src/server/import-thread.ts' },
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  plugins: [externals],
  // commander is CommonJS: its require() of Node built-ins needs a real require in ESM output.
  banner: { js: "import { createRequire as __fathomRequire } from 'node:module'; const require = __fathomRequire(import.meta.url);" },
  sourcemap: 'linked',
  jsx: 'automatic',
  logLevel: 'warning',
  chunkNames: '[name]-[hash]',
});
const old = path.join(root, `dist.old-${process.pid}`);
try {
  renameSync(path.join(root, 'dist'), old);
} catch {
  /* first build */
}
renameSync(tmp, path.join(root, 'dist'));
rmSync(old, { recursive: true, force: true });
