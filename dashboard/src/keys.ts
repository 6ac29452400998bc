/**
 * dashboard/src/keys.ts: API keys (admin keys only): the list (ids, descriptions, scopes
 * and the first characters of each value, as GET /keys gives them), creating one (its
 * value shown this once, never stored by the page) and deleting one after a confirmation.
 */
import { enc, type Api } from './api.js';
import { confirmDialog, field, fill, h, say, statusLine, uid } from './dom.js';
import type { View } from './views.js';

interface KeyInfo {
  id: number;
  description?: string;
  actions: string[];
  collections: string[];
  value_prefix?: string;
  expires_at?: number;
  value?: string;
}

/** Ready-made scopes for the create form. */
const PRESETS: Record<string, { actions: string; label: string }> = {
  search: { actions: 'documents:search', label: 'Search only' },
  documents: { actions: 'documents:*', label: 'Documents: read and write' },
  admin: { actions: '*', label: 'Admin: everything' },
  custom: { actions: '', label: 'Custom actions' },
};
/** Expiry the API gives a key created without one (Typesense's: practically never). */
const NEVER = 64_723_363_199;

export function keysView(api: Api, may: (action: string) => boolean): View {
  const heading = h('h2', { id: uid('h'), tabindex: -1 }, 'API keys');
  const status = statusLine();
  const body = h('tbody');
  const table = h(
    'table',
    { class: 'list' },
    h('caption', { class: 'sr-only' }, 'API keys'),
    h(
      'thead',
      null,
      h('tr', null, ...['Id', 'Description', 'Actions', 'Collections', 'Starts with', 'Expires', 'Actions'].map((t, i) => h('th', { scope: 'col' }, i === 6 ? h('span', { class: 'sr-only' }, 'Delete') : t))),
    ),
    body,
  );
  const el = h('section', { class: 'view', 'aria-labelledby': heading.id }, heading, status, h('div', { class: 'table-wrap' }, table));

  const load = async () => {
    try {
      const { keys } = await api.call<{ keys: KeyInfo[] }>('GET', '/keys');
      if (keys.length === 0) {
        fill(body, h('tr', null, h('td', { colspan: 7 }, 'No stored keys.')));
        return;
      }
      fill(
        body,
        keys.map((k) =>
          h(
            'tr',
            null,
            h('td', { class: 'num' }, k.id),
            h('th', { scope: 'row' }, k.description || '—'),
            h('td', null, h('code', null, k.actions.join(', '))),
            h('td', null, h('code', null, k.collections.join(', '))),
            h('td', null, h('code', null, k.value_prefix ? `${k.value_prefix}…` : '—')),
            h('td', null, k.expires_at && k.expires_at < NEVER ? new Date(k.expires_at * 1000).toISOString().slice(0, 16).replace('T', ' ') : 'never'),
            h(
              'td',
              { class: 'actions' },
              may('keys:delete')
                ? h(
                    'button',
                    {
                      type: 'button',
                      class: 'danger',
                      'aria-label': `Delete key ${k.id}${k.description ? ` (${k.description})` : ''}`,
                      onclick: async () => {
                        if (!(await confirmDialog(`Delete key ${k.id}?`, `Clients using the key "${k.description || k.id}" will be refused from now on.`, 'Delete key'))) return;
                        try {
                          await api.call('DELETE', `/keys/${enc(String(k.id))}`);
                          say(status, 'ok', `Deleted key ${k.id}.`);
                          await load();
                        } catch (e) {
                          say(status, 'error', (e as Error).message);
                        }
                      },
                    },
                    'Delete',
                  )
                : null,
            ),
          ),
        ),
      );
    } catch (e) {
      say(status, 'error', (e as Error).message);
    }
  };

  if (may('keys:create')) {
    const description = h('input', { type: 'text', name: 'description', autocomplete: 'off', required: true });
    const preset = h('select', { name: 'preset' }, ...Object.entries(PRESETS).map(([v, p]) => h('option', { value: v }, p.label)));
    const actions = h('input', { type: 'text', name: 'actions', autocomplete: 'off', spellcheck: 'false', value: PRESETS.search!.actions, required: true });
    const collections = h('input', { type: 'text', name: 'collections', autocomplete: 'off', spellcheck: 'false', value: '*', required: true });
    const expires = h('input', { type: 'date', name: 'expires' });
    preset.addEventListener('change', () => {
      const p = PRESETS[preset.value];
      if (p && p.actions !== '') actions.value = p.actions;
      if (preset.value === 'custom') actions.focus();
    });
    const result = statusLine();
    const made = h('div', { class: 'new-key' });
    const form = h(
      'form',
      { class: 'create' },
      h('h3', null, 'Create a key'),
      field('Description', description),
      field('Scope', preset),
      field('Actions', actions, 'Comma-separated, e.g. documents:search, collections:get, or * for all.'),
      field('Collections', collections, 'Comma-separated names or regular expressions; * for all.'),
      field('Expires (optional)', expires),
      h('button', { type: 'submit' }, 'Create key'),
      result,
    );
    const list = (s: string) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      fill(made);
      const spec: Record<string, unknown> = { description: description.value.trim(), actions: list(actions.value), collections: list(collections.value) };
      if (expires.value) spec.expires_at = Math.floor(new Date(`${expires.value}T23:59:59Z`).getTime() / 1000);
      try {
        const k = await api.call<KeyInfo>('POST', '/keys', { body: spec });
        say(result, 'ok', `Created key ${k.id}.`);
        // set as a property, never an attribute: the value stays out of the page's HTML
        const value = h('input', { type: 'text', readonly: true, class: 'code key-value', 'aria-describedby': uid('once') });
        value.value = k.value ?? '';
        const note = h('p', { id: value.getAttribute('aria-describedby')!, class: 'warn' }, 'This is the only time the value is shown: copy it now and keep it safe.');
        const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy');
        copy.addEventListener('click', async () => {
          value.select();
          try {
            await navigator.clipboard.writeText(value.value);
            copy.textContent = 'Copied';
          } catch {
            copy.textContent = 'Selected: press Ctrl+C';
          }
        });
        const dismiss = h('button', { type: 'button', class: 'secondary' }, 'Done');
        dismiss.addEventListener('click', () => fill(made));
        fill(made, field(`Value of key ${k.id}`, value), note, h('div', { class: 'actions' }, copy, dismiss));
        value.focus();
        value.select();
        form.reset();
        actions.value = PRESETS.search!.actions;
        collections.value = '*';
        await load();
      } catch (err) {
        say(result, 'error', (err as Error).message);
      }
    });
    // outside the form, so that resetting the form leaves the new value shown
    el.append(form, made);
  }

  void load();
  return { el, focus: () => heading.focus(), dispose() {} };
}
