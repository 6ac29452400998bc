/**
 * Headless Chromium for tests that drive a page: the system's Chromium (Debian's
 * `chromium` package; `.ci/run` installs it), driven by playwright-core, which never
 * downloads a browser. `CHROMIUM_PATH` names another executable.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers.js';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** The Chromium executable to use, or undefined when there is none. */
export function findChromium(): string | undefined {
  const env = process.env.CHROMIUM_PATH;
  if (env) return fs.existsSync(env) ? env : undefined;
  return CANDIDATES.find((p) => fs.existsSync(p));
}

/** Where screenshots go (gitignored): test/artifacts/<name>/, emptied first. */
export function artifactDir(name: string): string {
  const dir = path.join(ROOT, 'test', 'artifacts', name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}
