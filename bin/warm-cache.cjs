// Build time only: makes dist/main.cjs.cache, the code cache bin/program.cjs loads the
// program with, from a warm-up run of the common commands. Kept out of program.cjs, which
// every `fathom` start compiles. bin/build.mjs runs it in a child process.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadProgram } = require('./program.cjs');

/**
 * Runs the common commands once on a throw-away data directory (create, import, export,
 * get, search as JSON and for people) and saves the code cache they leave behind. Used by
 * bin/build.mjs in a child process whose output is discarded.
 */
async function warmCache(distDir) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-warm-'));
  try {
    const schema = path.join(work, 'schema.json');
    const docs = path.join(work, 'docs.jsonl');
    fs.writeFileSync(
      schema,
      JSON.stringify({
        name: 'warm',
        fields: [
          { name: 'name', type: 'string' },
          { name: 'summary', type: 'string' },
          { name: 'section', type: 'string', facet: true },
          { name: 'size', type: 'int32', optional: true, sort: true },
          { name: 'tags', type: 'string[]', optional: true },
        ],
      }),
    );
    const words = ['library', 'python', 'network', 'server', 'editor', 'graphics', 'kernel', 'utility'];
    const lines = [];
    for (let i = 0; i < 200; i++) {
      const w = (k) => words[(i * 7 + k * 3) % words.length];
      lines.push(JSON.stringify({ name: `pkg-${w(0)}-${i}`, summary: `${w(1)} ${w(2)} for ${w(3)} tools`, section: w(4), size: i * 13, tags: [w(5), w(6)] }));
    }
    fs.writeFileSync(docs, lines.join('\n') + '\n');
    const { main, saveCache } = loadProgram(distDir);
    const d = ['--data-dir', path.join(work, 'data')];
    const run = async (...args) => {
      const code = await main(['node', 'fathom', ...args, ...d]);
      if (code !== 0) throw new Error(`warm-up: \`fathom ${args.join(' ')}\` exited with ${code}`);
    };
    await run('collections', 'create', schema);
    await run('import', 'warm', docs);
    await run('collections', 'list');
    await run('export', 'warm');
    await run('documents', 'get', 'warm', '0');
    await run('search', 'warm', '-q', 'pyhton librar', '--query-by', 'name,summary', '--facet-by', 'section', '--filter-by', 'size:>10', '--json');
    await run('search', 'warm', '-q', 'network server', '--query-by', 'name,summary', '--sort-by', 'size:desc');
    if (!saveCache(true)) throw new Error('could not write the code cache');
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { warmCache };
