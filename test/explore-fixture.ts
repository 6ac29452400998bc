/** A small books collection for the explorer's tests, and a client over it. */
import { BOOKS_SCHEMA, dataDirPath, openEngine } from './helpers.js';
import { EngineClient } from '../commands/explore/engine-client.js';
import type { CollectionSchema } from '../commands/explore/client.js';
import type { Engine } from '../src/engine.js';

export const BOOKS = [
  { id: '1', title: "Harry Potter and the Philosopher's Stone", author: 'J. K. Rowling', tags: ['magic', 'school'], year: 1997, rating: 4.5, in_print: true },
  { id: '2', title: 'Harry Potter and the Chamber of Secrets', author: 'J. K. Rowling', tags: ['magic', 'school'], year: 1998, rating: 4.3, in_print: true },
  { id: '3', title: 'The Hobbit', author: 'J. R. R. Tolkien', tags: ['fantasy', 'adventure'], year: 1937, rating: 4.7, in_print: true },
  { id: '4', title: 'The Lord of the Rings', author: 'J. R. R. Tolkien', tags: ['fantasy', 'epic'], year: 1954, rating: 4.9, in_print: true },
  { id: '5', title: 'Dune', author: 'Frank Herbert', tags: ['science fiction', 'desert'], year: 1965, rating: 4.6, in_print: true },
  { id: '6', title: 'A Wizard of Earthsea', author: 'Ursula K. Le Guin', tags: ['fantasy', 'magic', 'school'], year: 1968, rating: 4.2, in_print: false },
  { id: '7', title: 'The Name of the Wind', author: 'Patrick Rothfuss', tags: ['fantasy', 'magic'], year: 2007, rating: 4.5 },
  { id: '8', title: 'Harry Potter and the Prisoner of Azkaban', author: 'J. K. Rowling', tags: ['magic', 'school'], year: 1999, rating: 4.8, in_print: true },
];

/** A data directory holding the `books` collection. */
export async function booksEngine(dir = dataDirPath()): Promise<{ engine: Engine; dir: string }> {
  const engine = openEngine(dir);
  await engine.createCollection(BOOKS_SCHEMA);
  for (const b of BOOKS) await engine.writeDocument('books', b);
  return { engine, dir };
}

export async function booksClient(): Promise<{ engine: Engine; client: EngineClient; schema: CollectionSchema }> {
  const { engine, dir } = await booksEngine();
  const client = new EngineClient(engine, { kind: 'local', dataDir: dir, defaultDataDir: false }, false);
  return { engine, client, schema: await client.schema('books') };
}
