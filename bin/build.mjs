// Builds dist/ from the TypeScript sources with esbuild: one ESM bundle per entry, with
// shared chunks, so `fathom` starts by loading only the code its subcommand needs.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: 'bin/main.ts', 'merge-worker': 'src/index/merge-worker.ts' },
  outdir: 'dist',
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
