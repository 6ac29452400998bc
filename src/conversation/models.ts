/**
 * src/conversation/models.ts: conversation models, the LLMs conversational search answers
 * with (`/conversations/models`).
 *
 *   id              given, or generated
 *   model_name      `openai/<model>`, `cloudflare/<model>`, `vllm/<model>` (src/llm/config.ts)
 *   api_key         stored, always shown masked
 *   account_id      Cloudflare's account
 *   vllm_url        the vLLM server; `openai_url` (+ `openai_path`) or `api_url`: any
 *                   OpenAI-compatible server
 *   system_prompt   sent as the system message of every answer
 *   max_bytes       required, > 0: the largest request body sent to the LLM in one call
 *   ttl             seconds the conversations it starts are kept (default 86400)
 *   history_collection  accepted and kept, as the reference's clients send it; histories
 *                   live in the data directory whatever it says
 *   timeout_ms      per call (default CONVERSATION_DEFAULTS.llmTimeoutMs)
 */
import { CONVERSATION_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { checkTimeout, providerConfig } from '../llm/config.js';
import { ModelRegistry, type ModelKind, type ModelRecord } from '../llm/registry.js';
import type { Store } from '../storage/store.js';

export interface ConversationModel extends ModelRecord {
  system_prompt?: string;
  max_bytes: number;
  ttl: number;
  account_id?: string;
  vllm_url?: string;
  openai_url?: string;
  openai_path?: string;
  api_url?: string;
  history_collection?: string;
  timeout_ms?: number;
}

function bad(msg: string): never {
  throw new FathomError('BAD_REQUEST', msg);
}

/** A positive whole number field, or its default. */
export function positiveInt(rec: Record<string, unknown>, k: string, dflt: number | undefined, max = Number.MAX_SAFE_INTEGER): number {
  const v = rec[k];
  if (v === undefined || v === null) {
    if (dflt === undefined) bad(`\`${k}\` is required: a whole number above 0`);
    return dflt;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) bad(`\`${k}\` must be a whole number from 1 to ${max}, got ${JSON.stringify(v)}`);
  return v;
}

export function optionalString(rec: Record<string, unknown>, k: string): string | undefined {
  const v = rec[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') bad(`\`${k}\` must be a string`);
  return v;
}

export const CONVERSATION_MODEL_KIND: ModelKind<ConversationModel> = {
  area: 'conv_model',
  noun: 'conversation model',
  fields: ['model_name', 'api_key', 'account_id', 'system_prompt', 'max_bytes', 'ttl', 'vllm_url', 'openai_url', 'openai_path', 'api_url', 'history_collection', 'timeout_ms'],
  validate(rec) {
    providerConfig(rec); // the provider fields, with their own messages
    const out: ConversationModel = {
      id: rec.id as string,
      model_name: rec.model_name as string,
      max_bytes: positiveInt(rec, 'max_bytes', undefined),
      ttl: positiveInt(rec, 'ttl', CONVERSATION_DEFAULTS.ttl, CONVERSATION_DEFAULTS.maxTtl),
    };
    for (const k of ['api_key', 'account_id', 'system_prompt', 'vllm_url', 'openai_url', 'openai_path', 'api_url', 'history_collection'] as const) {
      const v = optionalString(rec, k);
      if (v !== undefined) out[k] = v;
    }
    const t = checkTimeout(rec.timeout_ms);
    if (t !== undefined) out.timeout_ms = t;
    return out;
  },
};

export function conversationModels(store: Store): ModelRegistry<ConversationModel> {
  return new ModelRegistry(CONVERSATION_MODEL_KIND, store);
}
