/** Shared by the conversation tests: a data directory with the tiny embedding model, and books to ask about. */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, dataDirPath, openEngine } from './helpers.js';
import type { Engine } from '../src/engine.js';

/** A data directory holding the tiny BERT fixture as the user model `tiny`. */
export function dirWithTinyModel(): string {
  const dir = dataDirPath();
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert'), path.join(dir, 'models', 'tiny'), { recursive: true });
  return dir;
}

export const BOOKS = [
  { id: 'b1', title: 'the hobbit a journey through middle earth', author: 'tolkien', year: 1937 },
  { id: 'b2', title: 'dune a desert planet and its spice', author: 'herbert', year: 1965 },
  { id: 'b3', title: 'a wizard of earthsea and the school of magic', author: 'le guin', year: 1968 },
  { id: 'b4', title: 'the left hand of darkness on a winter planet', author: 'le guin', year: 1969 },
  { id: 'b5', title: 'neuromancer hackers in cyberspace', author: 'gibson', year: 1984 },
  { id: 'b6', title: 'the lord of the rings and the one ring', author: 'tolkien', year: 1954 },
];

export async function booksEngine(dir = dirWithTinyModel()): Promise<Engine> {
  const e = openEngine(dir);
  await e.createCollection({
    name: 'books',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'author', type: 'string', facet: true },
      { name: 'year', type: 'int32', facet: true },
      { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'tiny' } } },
    ],
  });
  await e.import('books', [Buffer.from(BOOKS.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  await e.createCollection({
    name: 'authors',
    fields: [
      { name: 'name', type: 'string' },
      { name: 'bio', type: 'string' },
      { name: 'emb', type: 'float[]', embed: { from: ['bio'], model_config: { model_name: 'tiny' } } },
    ],
  });
  const authors = [
    { id: 'a1', name: 'tolkien', bio: 'english writer of fantasy and philologist' },
    { id: 'a2', name: 'le guin', bio: 'american writer of science fiction and fantasy' },
  ];
  await e.import('authors', [Buffer.from(authors.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  await e.createCollection({ name: 'plain', fields: [{ name: 'title', type: 'string' }] });
  return e;
}
