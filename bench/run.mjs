#!/usr/bin/env node
// Runs a TypeScript benchmark: bundles bench/<name>/<name>.ts (or a given .ts path) with
// esbuild into bench/out/ and runs it with the remaining arguments.
//   node bench/run.mjs search [--dataset path] [...]
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const [name, ...args] = process.argv.slice(2);
if (!name) {
  console.error('usage: node bench/run.mjs <import|search|million|merge|vector|join|http|embed> [args]');
  process.exit(2);
}
const entry = name.endsWith('.ts') ? path.resolve(name) : path.join(root, 'bench', name, `${name}.ts`);
if (!existsSync(entry)) {
  console.error(`no benchmark at ${entry}`);
  process.exit(2);
}
const outdir = path.join(root, 'bench', 'out');
mkdirSync(outdir, { recursive: true });
const outfile = path.join(outdir, `${path.basename(entry, '.ts')}.mjs`);
await build({ entryPoints: [entry], outfile, bundle: true, format: 'esm', platform: 'node', target: 'node20', packages: 'external', logLevel: 'warning', sourcemap: 'inline' });
const r = spawnSync(process.execPath, ['--expose-gc', outfile, ...args], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
