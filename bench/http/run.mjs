// Runs a benchmark script of this folder: bundles it with esbuild (the project's sources
// are TypeScript) and imports it. Usage: node bench/http/run.mjs <script.ts> [args...]
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const script = process.argv[2] ?? 'bench.ts';
const outdir = path.join(here, '..', '..', 'node_modules', '.cache', 'fathom-bench');
const out = path.join(outdir, path.basename(script).replace(/\.ts$/, '.mjs'));
// The scripts a run may start besides the one asked for (servers and threads).
const helpers = ['threads-server.ts', 'search-thread.ts'].filter((f) => f !== script);
await build({
  absWorkingDir: path.join(here, '..', '..'),
  entryPoints: [script, ...helpers].map((f) => path.join(here, f)),
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
process.argv.splice(2, 1);
await import(pathToFileURL(out).href);
