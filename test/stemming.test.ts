/**
 * Stemming dictionaries: `/stemming/dictionaries` through `fathom serve` and the typesense
 * client, the `stem_dictionary` field attribute at index and query time, and the writes
 * travelling as replicated commands.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { applying } from '../src/clock.js';
import { applyCommand } from '../src/cluster/apply.js';
import { decode, encode, type Command } from '../src/cluster/command.js';
import { dataDirPath, openEngine } from './helpers.js';

const KEY = 'stem-key';
let server: RunningServer;
let client: Client;

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
});

afterAll(async () => {
  await server?.stop();
});

const ids = (r: { hits?: Array<{ document: unknown }> }) => (r.hits ?? []).map((h) => (h.document as { id: string }).id).sort();

describe('stemming dictionaries over HTTP', () => {
  it('imports, lists, retrieves and deletes a dictionary', async () => {
    const imported = await client.stemming.dictionaries().upsert('plurals', [
      { word: 'People', root: 'person' },
      { word: 'mice', root: 'mouse' },
    ]);
    expect(imported).toEqual([
      { word: 'people', root: 'person' },
      { word: 'mice', root: 'mouse' },
    ]);
    expect(await client.stemming.dictionaries().retrieve()).toEqual({ dictionaries: ['plurals'] });
    expect(await client.stemming.dictionaries('plurals').retrieve()).toEqual({
      id: 'plurals',
      words: [
        { word: 'people', root: 'person' },
        { word: 'mice', root: 'mouse' },
      ],
    });
    await client.stemming.dictionaries().upsert('scratch', [{ word: 'a', root: 'b' }]);
    expect(await client.stemming.dictionaries('scratch').delete()).toEqual({ id: 'scratch' });
    await expect(client.stemming.dictionaries('scratch').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('refuses a bad import whole, with 400 naming the line, and stores nothing of it', async () => {
    const text = ['{"word": "geese", "root": "goose"}', '{"word": "oxen"}'].join('\n');
    await expect(client.stemming.dictionaries().upsert('bad', text)).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/line 2/) });
    await expect(client.stemming.dictionaries('bad').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
    await expect(client.stemming.dictionaries().upsert('', [{ word: 'a', root: 'b' }])).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('indexes and searches a stem_dictionary field by the roots, and sees a changed dictionary', async () => {
    await client.collections().create({ name: 'zoo', fields: [{ name: 't', type: 'string', stem_dictionary: 'plurals' }] as never });
    expect((await client.collections('zoo').retrieve()).fields[0]).toMatchObject({ stem_dictionary: 'plurals' });
    await client.collections('zoo').documents().import(
      [
        { id: '1', t: 'a person with mice' },
        { id: '2', t: 'people and a mouse' },
        { id: '3', t: 'a goose' },
      ],
      { action: 'create' },
    );
    expect(ids(await client.collections('zoo').documents().search({ q: 'people', query_by: 't' }))).toEqual(['1', '2']);
    expect(ids(await client.collections('zoo').documents().search({ q: 'mouse', query_by: 't', prefix: false }))).toEqual(['1', '2']);
    expect(ids(await client.collections('zoo').documents().search({ q: 'geese', query_by: 't', num_typos: 0 }))).toEqual([]);
    await client.stemming.dictionaries().upsert('plurals', [{ word: 'geese', root: 'goose' }]);
    expect(ids(await client.collections('zoo').documents().search({ q: 'geese', query_by: 't', num_typos: 0 }))).toEqual(['3']);
    // the highlight marks the word as written
    const h = await client.collections('zoo').documents().search({ q: 'people', query_by: 't', filter_by: 'id:1' });
    expect(h.hits![0]!.highlight).toMatchObject({ t: { snippet: 'a <mark>person</mark> with mice' } });
  });

  it('refuses stem_dictionary on a field that is not a string', async () => {
    await expect(client.collections().create({ name: 'bad', fields: [{ name: 'n', type: 'int32', stem_dictionary: 'plurals' }] as never })).rejects.toMatchObject({ httpStatus: 400 });
  });
});

describe('stemming dictionary writes in a cluster', () => {
  it('go through commit as commands that another node applies to the same dictionary', async () => {
    const a = openEngine();
    const b = openEngine();
    const sent: Command[] = [];
    let seq = 0;
    // a's writes go through the "stream": every node applies each command, as the replicator does
    a.replicateThrough(async (cmd) => {
      const wire = decode(encode({ id: String(++seq), at: Date.now(), cmd })).cmd;
      sent.push(wire);
      await applying({ seq, nowMs: Date.now() }, () => applyCommand(b, wire));
      return applying({ seq, nowMs: Date.now() }, () => applyCommand(a, wire));
    });
    await a.importStemmingDictionary('d', '{"word": "Went", "root": "go"}');
    await a.deleteStemmingDictionary('d');
    await a.importStemmingDictionary('d', '{"word": "ran", "root": "run"}');
    expect(sent.map((c) => c.op)).toEqual(['stemdict.import', 'stemdict.delete', 'stemdict.import']);
    expect(sent[0]).toEqual({ op: 'stemdict.import', id: 'd', words: [['went', 'go']] });
    expect(b.getStemmingDictionary('d')).toEqual(a.getStemmingDictionary('d'));
    expect(b.getStemmingDictionary('d').words).toEqual([{ word: 'ran', root: 'run' }]);
    await a.close();
    await b.close();
  });
});
