/**
 * dashboard/src/collections.ts: the list of collections with their document counts and
 * schemas, creating one from a JSON schema (the server's error shown as it is), and
 * deleting one after a confirmation.
 */
import { ApiError, enc, type Access, type Api } from './api.js';
import { confirmDialog, field, fill, h, pretty, say, statusLine, uid } from './dom.js';
import type { View } from './views.js';

const EXAMPLE = {
  name: 'books',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'authors', type: 'string[]', facet: true },
    { name: 'year', type: 'int32', facet: true },
  ],
};

interface Info {
  name: string;
  num_documents?: number;
  created_at?: number;
  fields?: unknown[];
  [k: string]: unknown;
}

export function collectionsView(api: Api, access: Access, changed: () => Promise<void>, openSearch: (name: string) => void): View {
  const heading = h('h2', { id: uid('h'), tabindex: -1 }, 'Collections');
  const status = statusLine();
  const body = h('tbody');
  const table = h(
    'table',
    { class: 'list' },
    h('caption', { class: 'sr-only' }, 'Collections'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Documents'), h('th', { scope: 'col' }, 'Fields'), h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Actions'))),
    body,
  );
  const el = h('section', { class: 'view', 'aria-labelledby': heading.id }, heading, status, h('div', { class: 'table-wrap' }, table));
  const can = (a: string) => access.actions.includes(a);

  const load = async () => {
    let list: Info[];
    try {
      list = can('collections:list') ? await api.call<Info[]>('GET', '/collections') : (access.collections.filter((c) => !c.alias_of) as unknown as Info[]);
    } catch (e) {
      say(status, 'error', (e as Error).message);
      return;
    }
    if (list.length === 0) {
      fill(body, h('tr', null, h('td', { colspan: 5 }, 'No collections yet.')));
      return;
    }
    fill(
      body,
      list
        .slice()
        .sort((a, b) => a.name.localeCompare(b.name))
        .flatMap((c) => row(c)),
    );
  };

  const row = (c: Info): HTMLTableRowElement[] => {
    const mine = access.collections.find((x) => x.name === c.name);
    const schemaRow = h('tr', { class: 'schema-row' }, h('td', { colspan: 5 }, h('pre', { class: 'json', tabindex: 0, 'aria-label': `Schema of ${c.name}` }, pretty(c))));
    schemaRow.hidden = true;
    const schemaBtn = h('button', { type: 'button', class: 'secondary', 'aria-expanded': 'false' }, 'Schema');
    schemaBtn.addEventListener('click', () => {
      schemaRow.hidden = !schemaRow.hidden;
      schemaBtn.setAttribute('aria-expanded', String(!schemaRow.hidden));
    });
    const actions: HTMLElement[] = [schemaBtn];
    if (mine?.actions.includes('documents:search')) actions.push(h('button', { type: 'button', class: 'secondary', onclick: () => openSearch(c.name) }, 'Search'));
    if (mine?.actions.includes('collections:delete')) {
      actions.push(
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete collection ${c.name}`,
            onclick: async () => {
              const n = c.num_documents === undefined ? 'all its' : `its ${c.num_documents.toLocaleString()}`;
              if (!(await confirmDialog(`Delete ${c.name}?`, `This deletes the collection ${c.name} and ${n} documents. It cannot be undone.`, 'Delete collection'))) return;
              try {
                await api.call('DELETE', `/collections/${enc(c.name)}`);
                say(status, 'ok', `Deleted ${c.name}.`);
                await changed();
                await load();
              } catch (e) {
                say(status, 'error', (e as Error).message);
              }
            },
          },
          'Delete',
        ),
      );
    }
    return [
      h(
        'tr',
        null,
        h('th', { scope: 'row' }, c.name),
        h('td', { class: 'num' }, c.num_documents === undefined ? '—' : c.num_documents.toLocaleString()),
        h('td', { class: 'num' }, Array.isArray(c.fields) ? c.fields.length : '—'),
        h('td', null, c.created_at ? new Date(c.created_at * 1000).toISOString().slice(0, 16).replace('T', ' ') : '—'),
        h('td', { class: 'actions' }, actions),
      ),
      schemaRow,
    ];
  };

  if (can('collections:create')) {
    const text = h('textarea', { name: 'schema', rows: 12, spellcheck: 'false', class: 'code' }, pretty(EXAMPLE));
    const file = h('input', { type: 'file', name: 'schema-file', accept: '.json,application/json' });
    file.addEventListener('change', async () => {
      const f = file.files?.[0];
      if (f) text.value = await f.text();
    });
    const result = statusLine();
    const form = h(
      'form',
      { class: 'create' },
      h('h3', null, 'Create a collection'),
      field('Schema (JSON)', text, 'The same JSON as POST /collections takes.'),
      field('Or load a schema file', file),
      h('button', { type: 'submit' }, 'Create collection'),
      result,
    );
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      let schema: unknown;
      try {
        schema = JSON.parse(text.value);
      } catch (err) {
        say(result, 'error', `The schema is not valid JSON: ${(err as Error).message}`);
        return;
      }
      try {
        const made = await api.call<Info>('POST', '/collections', { body: schema });
        say(result, 'ok', `Created ${made.name}.`);
        await changed();
        await load();
      } catch (err) {
        say(result, 'error', err instanceof ApiError ? `The server refused it (${err.status}): ${err.message}` : (err as Error).message);
      }
    });
    el.append(form);
  }

  void load();
  return { el, focus: () => heading.focus(), dispose() {} };
}
