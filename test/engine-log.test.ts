/** Background work that fails is reported through the engine's log, never swallowed. */
import { describe, expect, it } from 'vitest';
import { dataDirPath, openEngine } from './helpers.js';
import { readState } from '../src/index/manifest.js';
import type { EngineLog } from '../src/engine.js';

function capture(): EngineLog & { lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  return {
    lines,
    warn: (fields, msg) => lines.push({ level: 'warn', msg, fields }),
    error: (fields, msg) => lines.push({ level: 'error', msg, fields }),
  };
}

describe('the engine log', () => {
  it('reports a background merge that fails, with its collection and error', async () => {
    const log = capture();
    const e = openEngine(dataDirPath(), { merges: 'inline', log });
    await e.createCollection({ name: 'c', fields: [{ name: 't', type: 'string' }] });
    // seven one-document segments: the eighth makes a merge due
    for (let i = 0; i < 7; i++) await e.writeDocument('c', { id: String(i), t: `word ${i}` });
    await e.idle();
    const collId = (e.store.collections.get('c') as { id: number }).id;
    const first = readState(e.store, collId).segments[0]!;
    // a segment no reader has opened yet, made unreadable
    e.store.segments.putSync([collId, first.id, 0], Buffer.from('not a segment'));
    await e.writeDocument('c', { id: '7', t: 'word 7' });
    await e.idle();
    expect(log.lines.some((l) => l.level === 'error' && l.msg === 'a background segment merge failed' && l.fields.collection === 'c' && l.fields.err instanceof Error)).toBe(true);
    await e.close();
  });

  it('stays quiet when the collection of a queued merge is dropped', async () => {
    const log = capture();
    const e = openEngine(dataDirPath(), { merges: 'inline', log });
    await e.createCollection({ name: 'c', fields: [{ name: 't', type: 'string' }] });
    for (let i = 0; i < 8; i++) await e.writeDocument('c', { id: String(i), t: `word ${i}` });
    await e.deleteCollection('c');
    await e.idle();
    expect(log.lines.filter((l) => l.level === 'error')).toEqual([]);
    await e.close();
  });
});
