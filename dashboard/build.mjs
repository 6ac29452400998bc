// Builds the web dashboard (dashboard/src, served by src/server/routes/dashboard.ts) into
// <outdir>/: one minified browser bundle and its stylesheet, named by content hash, each
// with a gzipped twin, and index.html naming them. Everything the page runs is in these
// files: no CDN, nothing fetched from elsewhere at run time.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Builds into `outdir` (created); returns the assets' names with their raw and gzipped sizes. */
export async function buildDashboard(outdir) {
  const assets = path.join(outdir, 'assets');
  mkdirSync(assets, { recursive: true });
  const r = await build({
    absWorkingDir: here,
    entryPoints: { app: 'src/main.ts' },
    outdir: assets,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  const sizes = {};
  let js;
  let css;
  for (const out of Object.keys(r.metafile.outputs)) {
    const file = path.resolve(here, out);
    const name = path.basename(file);
    if (name.endsWith('.js')) js = name;
    else if (name.endsWith('.css')) css = name;
    const body = readFileSync(file);
    const gz = gzipSync(body, { level: 9 });
    writeFileSync(`${file}.gz`, gz);
    sizes[name] = { bytes: body.length, gzipped: gz.length };
  }
  if (!js || !css) throw new Error('the dashboard build made no script or no stylesheet');
  const html = readFileSync(path.join(here, 'index.html'), 'utf8').replaceAll('{{app.js}}', `/dashboard/assets/${js}`).replaceAll('{{app.css}}', `/dashboard/assets/${css}`);
  writeFileSync(path.join(outdir, 'index.html'), html);
  return sizes;
}
