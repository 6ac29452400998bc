#!/usr/bin/env node
// The `fathom` executable. The compiled program lives in dist/ (built by `npm install`).
import('../dist/main.js').catch((e) => {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/main.js')) {
    process.stderr.write('error: fathom is not built yet; run `npm install` (or `npm run build`) in the project directory\n');
    process.exit(1);
  }
  process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
