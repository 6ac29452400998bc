/**
 * src/llm/config.ts: which LLM a model record names, and where and how to reach it.
 *
 * A model record (a conversation model, a natural-language search model) names its LLM as
 * `<vendor>/<model>`:
 *
 *   openai/<model>       OpenAI chat completions, https://api.openai.com (or `openai_url` /
 *                        `api_url`: any OpenAI-compatible server; `openai_path` replaces the
 *                        path); `api_key` required for OpenAI itself
 *   cloudflare/<model>   Cloudflare Workers AI (`@cf/...` models); `api_key` and `account_id`
 *   vllm/<model>         a vLLM server's OpenAI-compatible API at `vllm_url` (or `api_url`);
 *                        `api_key` only when the server was started with one
 *
 * `timeout_ms` (Fathom's own) bounds each call (CONVERSATION_DEFAULTS.llmTimeoutMs).
 * Secrets: `api_key` is kept in the data directory (owner-only) because every call needs it,
 * and leaves it only masked (`maskSecret`).
 */
import { CONVERSATION_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isSealed, plainOrUndefined } from '../storage/secrets.js';

export const VENDORS = ['openai', 'cloudflare', 'vllm'] as const;
export type Vendor = (typeof VENDORS)[number];

/** Everything a client needs to call one model. */
export interface ProviderConfig {
  vendor: Vendor;
  /** The model name without the vendor prefix, as the provider knows it. */
  model: string;
  apiKey?: string;
  /** The full URL of the chat endpoint. */
  endpoint: string;
  timeoutMs: number;
  temperature?: number;
}

/** The record fields that steer the provider (a change to one of them is checked with the provider again). */
export const PROVIDER_FIELDS = ['model_name', 'api_key', 'account_id', 'vllm_url', 'openai_url', 'openai_path', 'api_url', 'timeout_ms'] as const;

function bad(msg: string): never {
  throw new FathomError('BAD_REQUEST', msg);
}

function optString(rec: Record<string, unknown>, k: string): string | undefined {
  const v = rec[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') bad(`\`${k}\` must be a string`);
  return v;
}

function httpUrl(k: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    bad(`\`${k}\` must be an http(s) URL, got ${JSON.stringify(v)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') bad(`\`${k}\` must be an http(s) URL, got ${JSON.stringify(v)}`);
  return v.replace(/\/+$/, '');
}

/**
 * The chat endpoint under an OpenAI-compatible URL: a URL that already ends in
 * `/chat/completions` is used as it is, anything else is a base URL.
 */
function chatEndpoint(base: string, path: string | undefined): string {
  if (path !== undefined) return base + (path.startsWith('/') ? path : `/${path}`);
  if (/\/chat\/completions$/.test(new URL(base).pathname)) return base;
  return base + CONVERSATION_DEFAULTS.chatCompletionsPath;
}

/** Splits `vendor/model`; throws a 400 naming the supported vendors. */
export function splitModelName(name: unknown): { vendor: Vendor; model: string } {
  if (typeof name !== 'string' || name.trim() === '') bad('`model_name` is required: `openai/<model>`, `cloudflare/<model>` or `vllm/<model>`');
  const slash = name.indexOf('/');
  const vendor = slash > 0 ? name.slice(0, slash) : '';
  const model = slash > 0 ? name.slice(slash + 1) : '';
  if (!(VENDORS as readonly string[]).includes(vendor)) {
    bad(`\`model_name\` \`${name}\` names no supported provider: use \`openai/<model>\`, \`cloudflare/<model>\` or \`vllm/<model>\``);
  }
  if (model.trim() === '') bad(`\`model_name\` \`${name}\` has no model after \`${vendor}/\``);
  return { vendor: vendor as Vendor, model };
}

/** `timeout_ms` checked (undefined when absent). */
export function checkTimeout(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > CONVERSATION_DEFAULTS.maxLlmTimeoutMs) {
    bad(`\`timeout_ms\` must be a whole number of milliseconds from 1 to ${CONVERSATION_DEFAULTS.maxLlmTimeoutMs}`);
  }
  return v;
}

/**
 * Reads the provider part of a model record. Throws 400 for anything missing or malformed,
 * naming the field.
 */
export function providerConfig(rec: Record<string, unknown>): ProviderConfig {
  const { vendor, model } = splitModelName(rec.model_name);
  const apiKey = optString(rec, 'api_key');
  const apiUrl = optString(rec, 'api_url');
  const timeoutMs = checkTimeout(rec.timeout_ms) ?? CONVERSATION_DEFAULTS.llmTimeoutMs;
  const temperature = rec.temperature;
  if (temperature !== undefined && (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))) bad('`temperature` must be a number from 0 to 2');
  const base = { vendor, model, timeoutMs, ...(apiKey ? { apiKey } : {}), ...(typeof temperature === 'number' ? { temperature } : {}) };
  if (vendor === 'openai') {
    const custom = optString(rec, 'openai_url') ?? apiUrl;
    if (!custom && !apiKey) bad('`api_key` is required for `openai/` models');
    const url = custom ? httpUrl(rec.openai_url !== undefined ? 'openai_url' : 'api_url', custom) : CONVERSATION_DEFAULTS.openaiUrl;
    return { ...base, endpoint: chatEndpoint(url, optString(rec, 'openai_path')) };
  }
  if (vendor === 'vllm') {
    const url = optString(rec, 'vllm_url') ?? apiUrl;
    if (!url) bad('`vllm_url` is required for `vllm/` models: the base URL of the vLLM server, e.g. http://localhost:8000');
    return { ...base, endpoint: chatEndpoint(httpUrl(rec.vllm_url !== undefined ? 'vllm_url' : 'api_url', url), undefined) };
  }
  const account = optString(rec, 'account_id');
  if (!apiKey) bad('`api_key` is required for `cloudflare/` models');
  if (!account || account.trim() === '') bad('`account_id` is required for `cloudflare/` models');
  const cf = apiUrl ? httpUrl('api_url', apiUrl) : CONVERSATION_DEFAULTS.cloudflareUrl;
  return { ...base, endpoint: `${cf}/client/v4/accounts/${encodeURIComponent(account)}/ai/run/${model.split('/').map((seg) => encodeURIComponent(seg).replace(/%40/g, '@')).join('/')}` };
}

/**
 * A secret as shown in answers and listings: never whole. Long values keep their first
 * four characters (enough to tell two keys apart), short ones none. A value stored
 * encrypted (src/storage/secrets.ts) is masked as its plain value, or as eight stars
 * when there is no key to open it.
 */
export function maskSecret(stored: string): string {
  const v = isSealed(stored) ? plainOrUndefined(stored) : stored;
  if (v === undefined) return '*'.repeat(8);
  if (v.length >= 16) return v.slice(0, 4) + '*'.repeat(v.length - 4);
  return '*'.repeat(Math.max(v.length, 8));
}

/** `text` with every occurrence of `secret` masked (for messages that quote what a provider said). */
export function redact(text: string, secret: string | undefined): string {
  if (!secret || secret.length < 4) return text;
  return text.split(secret).join(maskSecret(secret));
}
