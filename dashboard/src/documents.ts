/**
 * dashboard/src/documents.ts: importing a JSON Lines file (with a progress bar and the
 * lines that failed), exporting a collection, and getting, editing (upsert) and deleting
 * one document. Each part shows only when the key allows its action.
 */
import { enc, type Access, type Api } from './api.js';
import { confirmDialog, download, field, fill, h, pretty, say, statusLine, uid } from './dom.js';
import { importJsonl, type ImportAction, type ImportProgress } from './importer.js';
import type { View } from './views.js';

/** Failures listed on the page, at most (the count is always whole). */
const SHOWN_FAILURES = 200;
const DOC_ACTIONS = ['documents:import', 'documents:export', 'documents:get', 'documents:upsert', 'documents:delete'];

export function documentsView(api: Api, access: Access, initial: string | undefined, onCollection: (name: string) => void): View {
  const heading = h('h2', { id: uid('h'), tabindex: -1 }, 'Documents');
  const el = h('section', { class: 'view', 'aria-labelledby': heading.id }, heading);
  const usable = access.collections.filter((c) => c.actions.some((a) => DOC_ACTIONS.includes(a)));
  if (usable.length === 0) {
    el.append(h('p', null, 'This key may not read or write documents of any collection.'));
    return { el, focus: () => heading.focus(), dispose() {} };
  }
  let current = usable.find((c) => c.name === initial) ?? usable[0]!;
  const select = h('select', { name: 'collection' }, ...usable.map((c) => h('option', { value: c.name }, c.name)));
  select.value = current.name;
  const parts = h('div', { class: 'parts' });
  el.append(h('div', { class: 'toolbar' }, field('Collection', select)), parts);
  let abort: AbortController | undefined;

  const render = () => {
    abort?.abort();
    const can = (a: string) => current.actions.includes(a);
    fill(parts, can('documents:import') && importPart(), can('documents:export') && exportPart(), (can('documents:get') || can('documents:upsert')) && onePart());
  };

  const importPart = () => {
    const file = h('input', { type: 'file', name: 'jsonl', accept: '.jsonl,.ndjson,.json,.txt,application/x-ndjson,application/jsonl,text/plain', required: true });
    const action = h('select', { name: 'action' }, ...['create', 'upsert', 'update', 'emplace'].map((a) => h('option', { value: a }, a)));
    const bar = h('progress', { max: 100, value: 0, id: uid('progress') });
    const barLabel = h('label', { for: bar.id }, 'Import progress');
    const counts = h('p', { class: 'counts', 'aria-live': 'polite' });
    const progress = h('div', { class: 'progress' }, barLabel, bar, counts);
    progress.hidden = true;
    const status = statusLine();
    const failures = h('div', { class: 'failures' });
    const go = h('button', { type: 'submit' }, 'Import');
    const form = h('form', { class: 'import' }, h('h3', null, 'Import a JSON Lines file'), field('File (one JSON document per line)', file), field('Action', action), go, progress, status, failures);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const f = file.files?.[0];
      if (!f) return;
      abort = new AbortController();
      go.disabled = true;
      // (a second import starts from an empty bar, not the last one's full one)
      bar.value = 0;
      counts.textContent = '';
      progress.hidden = false;
      fill(failures);
      say(status, 'info', '');
      const show = (p: ImportProgress) => {
        bar.value = p.totalBytes > 0 ? Math.round((p.bytes / p.totalBytes) * 100) : 100;
        counts.textContent = `${p.lines.toLocaleString()} lines: ${p.ok.toLocaleString()} imported, ${p.failures.length.toLocaleString()} failed`;
      };
      try {
        const p = await importJsonl(api, current.name, f, action.value as ImportAction, show, abort.signal);
        say(status, p.failures.length > 0 ? 'error' : 'ok', `Imported ${p.ok.toLocaleString()} of ${p.lines.toLocaleString()} lines into ${current.name}${p.failures.length > 0 ? `; ${p.failures.length.toLocaleString()} failed (below)` : ''}.`);
        if (p.failures.length > 0) fill(failures, failureTable(p));
      } catch (err) {
        if ((err as Error).name !== 'AbortError') say(status, 'error', `The import stopped: ${(err as Error).message}`);
      } finally {
        go.disabled = false;
      }
    });
    return form;
  };

  const failureTable = (p: ImportProgress) =>
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'list failures-table' },
        h('caption', null, `Lines that failed (${p.failures.length.toLocaleString()})`),
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Line'), h('th', { scope: 'col' }, 'Error'), h('th', { scope: 'col' }, 'Text'))),
        h(
          'tbody',
          null,
          p.failures.slice(0, SHOWN_FAILURES).map((f) => h('tr', null, h('td', { class: 'num' }, f.line), h('td', null, f.error), h('td', null, h('code', null, f.text)))),
        ),
      ),
      p.failures.length > SHOWN_FAILURES ? h('p', null, `and ${(p.failures.length - SHOWN_FAILURES).toLocaleString()} more.`) : null,
    );

  const exportPart = () => {
    const status = statusLine();
    const go = h('button', { type: 'button' }, 'Export as JSON Lines');
    go.addEventListener('click', async () => {
      go.disabled = true;
      say(status, 'info', 'Exporting…');
      try {
        const text = await api.call<string>('GET', `/collections/${enc(current.name)}/documents/export`, { text: true });
        const n = text === '' ? 0 : text.split('\n').length;
        download(`${current.name}.jsonl`, new Blob([text === '' ? '' : `${text}\n`], { type: 'application/x-ndjson' }));
        say(status, 'ok', `Exported ${n.toLocaleString()} documents to ${current.name}.jsonl.`);
      } catch (err) {
        say(status, 'error', (err as Error).message);
      } finally {
        go.disabled = false;
      }
    });
    return h('div', { class: 'export' }, h('h3', null, 'Export'), go, status);
  };

  const onePart = () => {
    const can = (a: string) => current.actions.includes(a);
    const id = h('input', { type: 'text', name: 'id', autocomplete: 'off', spellcheck: 'false', required: true });
    const text = h('textarea', { name: 'document', rows: 12, spellcheck: 'false', class: 'code' });
    const status = statusLine();
    const getForm = h('form', { class: 'inline' }, field('Document id', id), h('button', { type: 'submit', class: 'secondary' }, 'Get'));
    getForm.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const doc = await api.call('GET', `/collections/${enc(current.name)}/documents/${enc(id.value.trim())}`);
        text.value = pretty(doc);
        say(status, 'ok', `Loaded ${id.value.trim()}.`);
      } catch (err) {
        say(status, 'error', (err as Error).message);
      }
    });
    const save = h('button', { type: 'button' }, 'Save (upsert)');
    save.addEventListener('click', async () => {
      let doc: unknown;
      try {
        doc = JSON.parse(text.value);
      } catch (err) {
        say(status, 'error', `The document is not valid JSON: ${(err as Error).message}`);
        return;
      }
      try {
        const saved = await api.call<{ id?: string }>('POST', `/collections/${enc(current.name)}/documents`, { body: doc, query: { action: 'upsert' } });
        if (saved?.id !== undefined) id.value = String(saved.id);
        say(status, 'ok', `Saved ${saved?.id ?? 'the document'}.`);
      } catch (err) {
        say(status, 'error', (err as Error).message);
      }
    });
    const del = h('button', { type: 'button', class: 'danger' }, 'Delete');
    del.addEventListener('click', async () => {
      const docId = id.value.trim();
      if (docId === '') {
        say(status, 'error', 'Give the id of the document to delete.');
        return;
      }
      if (!(await confirmDialog(`Delete document ${docId}?`, `This deletes document ${docId} from ${current.name}. It cannot be undone.`, 'Delete document'))) return;
      try {
        await api.call('DELETE', `/collections/${enc(current.name)}/documents/${enc(docId)}`);
        text.value = '';
        say(status, 'ok', `Deleted ${docId}.`);
      } catch (err) {
        say(status, 'error', (err as Error).message);
      }
    });
    return h(
      'div',
      { class: 'one' },
      h('h3', null, 'One document'),
      can('documents:get') ? getForm : null,
      field('Document (JSON)', text, can('documents:upsert') ? 'Edit and save: the whole document is written (upsert).' : undefined),
      h('div', { class: 'actions' }, can('documents:upsert') ? save : null, can('documents:delete') ? del : null),
      status,
    );
  };

  select.addEventListener('change', () => {
    current = usable.find((c) => c.name === select.value) ?? current;
    onCollection(current.name);
    render();
  });
  render();
  return { el, focus: () => heading.focus(), dispose: () => abort?.abort() };
}
