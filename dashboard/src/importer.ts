/**
 * dashboard/src/importer.ts: a JSON Lines file into a collection, batch by batch.
 *
 * The file is read as a stream (a large file is never held whole) and sent in batches of
 * at most BATCH_LINES lines or BATCH_BYTES characters, one batch at a time, through the
 * API's import route. Each batch's answer has one result line per line sent, so every
 * failure is reported with its line number in the file. Blank lines are skipped here and
 * never sent, so results and lines stay in step.
 *
 * Progress counts the bytes of the lines answered, not of the file read: a browser may hand
 * over a whole file in one chunk, and the bar would then be full before the first batch
 * was sent.
 */
import { type Api, enc } from './api.js';

/** Lines per import request (range 1..10000): progress moves at least this often. */
export const BATCH_LINES = 1000;
/** Characters per import request, at most (one longer line is sent alone). */
export const BATCH_BYTES = 1 << 20;
/** How much of a failed line a failure keeps. */
const EXCERPT = 300;

export interface ImportFailure {
  /** 1-based line number in the file. */
  line: number;
  error: string;
  /** The start of the line. */
  text: string;
}

export interface ImportProgress {
  /** Bytes of the file done so far: lines sent and answered, and blank lines skipped. */
  bytes: number;
  totalBytes: number;
  /** Lines sent and answered. */
  lines: number;
  ok: number;
  failures: ImportFailure[];
}

export type ImportAction = 'create' | 'upsert' | 'update' | 'emplace';

export async function importJsonl(
  api: Api,
  collection: string,
  file: Blob,
  action: ImportAction,
  onProgress: (p: ImportProgress) => void,
  signal?: AbortSignal,
): Promise<ImportProgress> {
  const p: ImportProgress = { bytes: 0, totalBytes: file.size, lines: 0, ok: 0, failures: [] };
  const reader = file.stream().getReader();
  const decoder = new TextDecoder();
  let rest = '';
  let lineNo = 0;
  let batch: string[] = [];
  let numbers: number[] = [];
  let size = 0;
  /** Bytes of the lines in `batch`, newlines included: done when the batch is answered. */
  let batchBytes = 0;
  const encoder = new TextEncoder();
  const bytesOf = (line: string) => encoder.encode(line).length + 1;

  const send = async () => {
    if (batch.length === 0) return;
    const text = await api.call<string>('POST', `/collections/${enc(collection)}/documents/import`, { body: batch.join('\n'), query: { action }, text: true, signal });
    const results = text.split('\n').filter((l) => l.trim() !== '');
    for (let i = 0; i < batch.length; i++) {
      let r: { success?: boolean; error?: string } | undefined;
      try {
        r = results[i] === undefined ? undefined : (JSON.parse(results[i]!) as { success?: boolean; error?: string });
      } catch {
        r = undefined;
      }
      if (r?.success === true) p.ok++;
      else p.failures.push({ line: numbers[i]!, error: r?.error ?? 'the server gave no result for this line', text: batch[i]!.slice(0, EXCERPT) });
    }
    p.lines += batch.length;
    p.bytes = Math.min(p.totalBytes, p.bytes + batchBytes);
    batch = [];
    numbers = [];
    size = 0;
    batchBytes = 0;
    onProgress(p);
  };
  const take = async (line: string) => {
    lineNo++;
    if (line.trim() === '') {
      p.bytes = Math.min(p.totalBytes, p.bytes + bytesOf(line));
      return;
    }
    if (batch.length > 0 && size + line.length > BATCH_BYTES) await send();
    batch.push(line.endsWith('\r') ? line.slice(0, -1) : line);
    numbers.push(lineNo);
    size += line.length + 1;
    batchBytes += bytesOf(line);
    if (batch.length >= BATCH_LINES) await send();
  };

  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = (rest + decoder.decode(value, { stream: true })).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) await take(l);
  }
  rest += decoder.decode();
  if (rest !== '') await take(rest);
  await send();
  p.bytes = p.totalBytes;
  onProgress(p);
  return p;
}
