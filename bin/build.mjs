// Builds dist/ from the TypeScript sources with esbuild: one ESM bundle per entry, with
// shared chunks, so `fathom` starts by loading only the code its subcommand needs.
import { build } from 'esbuild';
import { renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// Build beside dist/ and swap it in, so a running `fathom` never sees a half-built tree.
const tmp = path.join(root, `dist.tmp-${process.pid}`);
rmSync(tmp, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: 'bin/main.ts', 'merge-worker': 'src/index/merge-worker.ts', 'import-thread': 'src/server/import-thread.ts' },
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
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
