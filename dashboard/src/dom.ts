/**
 * dashboard/src/dom.ts: building elements, confirmations and status lines.
 *
 * Text always goes in as text nodes (never as HTML), so a document's values cannot become
 * markup; attributes are set one by one (never a `style` attribute: the page's CSP allows
 * no inline style).
 */

export type Child = Node | string | number | null | undefined | false | Child[];
type Handler = (e: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>;

/** `h('button', {type: 'button', onclick: fn}, 'Save')`: an element with attributes, handlers and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (typeof v === 'function') el.addEventListener(k.slice(2), v as Handler);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false && v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
/** A unique element id (for label `for`, `aria-labelledby`). */
export function uid(prefix: string): string {
  return `${prefix}-${++ids}`;
}

/** A labelled form control: `<div class="field"><label for=id>text</label>control</div>`. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLDivElement {
  if (!control.id) control.id = uid('f');
  let hintEl: HTMLElement | undefined;
  if (hint) {
    hintEl = h('small', { id: uid('hint'), class: 'hint' }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

/** Shows a status line: `error` lines are announced at once (role=alert), others politely. */
export function say(el: HTMLElement, kind: 'ok' | 'error' | 'info', text: string): void {
  el.className = `status status-${kind}`;
  el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  el.textContent = text;
  el.hidden = text === '';
}

export function statusLine(): HTMLParagraphElement {
  const p = h('p', { class: 'status', role: 'status' });
  p.hidden = true;
  return p;
}

/**
 * Asks for a confirmation in a modal dialog (focus stays inside it; Escape cancels).
 * Resolves true only for the confirming button.
 */
export function confirmDialog(title: string, message: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const ok = h('button', { type: 'button', class: 'danger' }, confirmLabel);
    const dlg = h('dialog', { 'aria-labelledby': titleId, class: 'confirm' }, h('h2', { id: titleId }, title), h('p', null, message), h('div', { class: 'actions' }, cancel, ok));
    let answer = false;
    cancel.addEventListener('click', () => dlg.close());
    ok.addEventListener('click', () => {
      answer = true;
      dlg.close();
    });
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(answer);
    });
    document.body.appendChild(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

/** JSON for people: two-space indentation. */
export function pretty(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

/** Saves text as a file through a temporary link (no server round trip, nothing in a URL but a blob). */
export function download(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
