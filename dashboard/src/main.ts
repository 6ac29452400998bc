/**
 * dashboard/src/main.ts: the page's frame: asking for a key, the navigation, and which
 * views the key gets.
 *
 * The key is kept in sessionStorage only (gone when the tab closes, never in a cookie, a
 * URL or localStorage) and sent in the header of every call. What the page offers comes
 * from `/dashboard/api/access`: a view whose actions the key lacks is not there at all.
 * Paths (/dashboard/search, /dashboard/collections, ...) name views, never data or keys.
 */
import './style.css';
import { Api, ApiError, type Access } from './api.js';
import { field, fill, h, say, statusLine } from './dom.js';
import { collectionsView } from './collections.js';
import { documentsView } from './documents.js';
import { keysView } from './keys.js';
import { searchView } from './search.js';
import type { View } from './views.js';

const STORE = 'fathom.dashboard.key';
type Tab = 'search' | 'collections' | 'documents' | 'keys';
const LABELS: Record<Tab, string> = { search: 'Search', collections: 'Collections', documents: 'Documents', keys: 'Keys' };

const root = document.getElementById('app')!;

function tabsFor(access: Access): Tab[] {
  const tabs: Tab[] = [];
  const any = (actions: string[]) => access.collections.some((c) => c.actions.some((a) => actions.includes(a)));
  if (any(['documents:search'])) tabs.push('search');
  if (access.actions.includes('collections:list') || access.actions.includes('collections:create') || any(['collections:get', 'collections:delete'])) tabs.push('collections');
  if (any(['documents:import', 'documents:export', 'documents:get', 'documents:upsert', 'documents:delete'])) tabs.push('documents');
  if (access.actions.includes('keys:list')) tabs.push('keys');
  return tabs;
}

function describeKey(access: Access): string {
  if (access.kind === 'scoped') return 'scoped search key';
  if (access.actions.includes('keys:create') && access.actions.includes('collections:create')) return 'admin key';
  if (access.actions.length === 0 && access.collections.every((c) => c.actions.length === 1 && c.actions[0] === 'documents:search')) return 'search-only key';
  return 'key with limited actions';
}

function login(message?: string): void {
  const input = h('input', { type: 'password', name: 'api-key', autocomplete: 'off', spellcheck: 'false', required: true });
  const status = statusLine();
  const go = h('button', { type: 'submit' }, 'Open');
  const form = h(
    'form',
    { class: 'login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Fathom'),
    h('p', null, 'Enter an API key. It stays in this tab only (session storage) and is sent in the X-TYPESENSE-API-KEY header of each request.'),
    field('API key', input),
    go,
    status,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (key === '') return;
    go.disabled = true;
    const api = new Api(key);
    try {
      const access = await api.access();
      sessionStorage.setItem(STORE, key);
      input.value = '';
      frame(api, access);
    } catch (err) {
      say(status, 'error', err instanceof ApiError && err.status === 401 ? `The server refused the key: ${err.message}.` : (err as Error).message);
      go.disabled = false;
      input.focus();
      input.select();
    }
  });
  fill(root, h('main', { id: 'main', class: 'login-page' }, form));
  if (message) say(status, 'error', message);
  input.focus();
}

function frame(api: Api, access: Access): void {
  let tabs = tabsFor(access);
  let view: View | undefined;
  let collection: string | undefined;
  const main = h('main', { id: 'main', tabindex: -1 });
  const nav = h('nav', { 'aria-label': 'Dashboard' });
  const links = new Map<Tab, HTMLAnchorElement>();
  const signOut = h('button', { type: 'button', class: 'secondary' }, 'Sign out');
  const who = h('span', { class: 'who' });

  const renderNav = () => {
    links.clear();
    const list = h('ul');
    for (const t of tabs) {
      const a = h('a', { href: `/dashboard/${t}` }, LABELS[t]);
      a.addEventListener('click', (e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        go(t, true);
      });
      links.set(t, a);
      list.append(h('li', null, a));
    }
    fill(nav, list);
    who.textContent = describeKey(access);
  };

  /** After a change of collections: the key's access again, in place. */
  const changed = async () => {
    Object.assign(access, await api.access());
    tabs = tabsFor(access);
    renderNav();
    for (const [t, a] of links) if (t === current) a.setAttribute('aria-current', 'page');
  };

  let current: Tab | undefined;
  const tabFromPath = (): Tab => {
    const t = location.pathname.replace(/^\/dashboard\/?/, '').split('/')[0] as Tab;
    return tabs.includes(t) ? t : tabs[0]!;
  };
  const go = (t: Tab, push: boolean, focus = true) => {
    if (push && location.pathname !== `/dashboard/${t}`) history.pushState(null, '', `/dashboard/${t}`);
    view?.dispose();
    current = t;
    for (const [tab, a] of links) {
      if (tab === t) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    const setCollection = (name: string) => (collection = name);
    view =
      t === 'search'
        ? searchView(api, access.collections, collection, setCollection)
        : t === 'collections'
          ? collectionsView(api, access, changed, (name) => {
              collection = name;
              go('search', true);
            })
          : t === 'documents'
            ? documentsView(api, access, collection, setCollection)
            : keysView(api, (a) => access.actions.includes(a));
    fill(main, view.el);
    document.title = `${LABELS[t]} · Fathom`;
    if (focus) view.focus();
  };

  signOut.addEventListener('click', () => {
    view?.dispose();
    sessionStorage.removeItem(STORE);
    window.removeEventListener('popstate', onPop);
    history.replaceState(null, '', '/');
    document.title = 'Fathom';
    login();
  });
  const onPop = () => go(tabFromPath(), false);
  window.addEventListener('popstate', onPop);

  renderNav();
  fill(
    root,
    h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
    h('header', { class: 'top' }, h('p', { class: 'brand' }, 'Fathom'), nav, h('div', { class: 'session' }, who, signOut)),
    main,
  );
  if (tabs.length === 0) {
    fill(main, h('section', { class: 'view' }, h('h2', null, 'Nothing to show'), h('p', null, 'This key allows nothing the dashboard offers.')));
    return;
  }
  const first = tabFromPath();
  if (location.pathname !== `/dashboard/${first}`) history.replaceState(null, '', `/dashboard/${first}`);
  go(first, false);
}

async function boot(): Promise<void> {
  const key = sessionStorage.getItem(STORE);
  if (!key) return login();
  const api = new Api(key);
  try {
    frame(api, await api.access());
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) sessionStorage.removeItem(STORE);
    login(`The saved key no longer works: ${(e as Error).message}.`);
  }
}

void boot();
