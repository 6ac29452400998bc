#!/usr/bin/env node
// The `fathom` executable. The compiled program is dist/main.cjs (built by `npm install`);
// bin/program.cjs loads it with V8's code cache. The only place that calls process.exit.
'use strict';
const { loadProgram } = require('./program.cjs');

async function start() {
  let program;
  try {
    program = loadProgram();
  } catch (e) {
    if (e && e.code === 'ENOENT' && String(e.path ?? '').endsWith('main.cjs')) {
      process.stderr.write('error: fathom is not built yet; run `npm install` (or `npm run build`) in the project directory\n');
    } else {
      process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    }
    return 1;
  }
  let code;
  try {
    code = await program.main(process.argv);
  } catch (e) {
    process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    code = 1;
  }
  program.saveCache();
  // Let pending stdout writes drain before exiting.
  if (process.stdout.writableLength > 0) await new Promise((r) => process.stdout.once('drain', r));
  return code;
}

start().then((code) => process.exit(code));
