/**
 * A CLI command's background failures (commands/common.ts `background`): kept, and said in
 * one warning line by a command that otherwise succeeded; a failed command's own one-line
 * error stands alone (test/disk-full.test.ts runs that case on a full disk).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { background, backgroundWarning, openEngine } from '../commands/common.js';
import { dataDirPath } from './helpers.js';

afterEach(() => {
  backgroundWarning();
  background.debug = false;
});

describe("a CLI command's background failures", () => {
  it('make one warning line, the first failure and how many more, and are then forgotten', async () => {
    const engine = await openEngine(dataDirPath());
    expect(backgroundWarning()).toBeUndefined();
    for (let i = 0; i < 3; i++) engine.log.error({ collection: 'notes', err: new Error(`no room ${i}`) }, 'a background segment merge failed');
    await engine.close();
    expect(backgroundWarning()).toBe('warning: a background segment merge failed (collection notes): no room 0 (and 2 more background failures)');
    expect(backgroundWarning()).toBeUndefined();
  });
});
