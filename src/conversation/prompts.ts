/**
 * src/conversation/prompts.ts: what is sent to the LLM, within its budget.
 *
 * Two calls, each bounded by the model's `max_bytes` (the whole JSON request body):
 *
 *   standalone question (follow-ups only): one user message holding the latest history
 *   (at most CONVERSATION_DEFAULTS.historyChars characters, newest messages kept, one JSON
 *   object per message) and the follow-up; the LLM answers with a question that stands alone.
 *
 *   answer: the model's `system_prompt` as the system message, then one user message holding
 *   the search results (one JSON document per line, the top hits of every search taken in
 *   turn, at most CONVERSATION_DEFAULTS.contextTokens tokens counted as bytesPerToken bytes)
 *   and the question.
 *
 * Budgets count bytes as they go over the wire (JSON-escaped UTF-8); escaping is per
 * character, so the bytes of a joined text are the sum of its parts'.
 */
import { CONVERSATION_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import type { ChatClient, ChatRequest } from '../llm/client.js';
import type { Turn } from './history.js';

const STANDALONE_INTRO =
  'Below is a conversation between a user and an assistant, then a follow-up question from the user. ' +
  'Rewrite the follow-up as one standalone question that can be understood without the conversation, ' +
  'carrying over every detail of the conversation it depends on. Reply with the standalone question and nothing else.';

const ANSWER_INTRO = 'Answer the question using the search results below (one JSON document per line).';

/** Bytes of a text inside a JSON string. */
export function jsonBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s)) - 2;
}

/** The longest start of `s` (`fromEnd`: end) whose JSON-escaped bytes fit `budget`, never splitting a surrogate pair. */
export function cutToBytes(s: string, budget: number, fromEnd = false): string {
  if (jsonBytes(s) <= budget) return s;
  let lo = 0;
  let hi = s.length;
  const piece = (n: number) => {
    let a = fromEnd ? s.length - n : 0;
    let b = fromEnd ? s.length : n;
    if (!fromEnd && b > 0 && b < s.length && /[\ud800-\udbff]/.test(s[b - 1]!)) b--;
    if (fromEnd && a > 0 && a < s.length && /[\udc00-\udfff]/.test(s[a]!)) a++;
    return s.slice(a, b);
  };
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (jsonBytes(piece(mid)) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return piece(lo);
}

function tooSmall(maxBytes: number, needed: number, what: string): FathomError {
  return new FathomError('BAD_REQUEST', `the conversation model's \`max_bytes\` (${maxBytes}) is too small: ${what} alone takes ${needed} bytes`);
}

function standaloneText(history: string, question: string): string {
  return `${STANDALONE_INTRO}\n\n<Conversation>\n${history}\n\n<Follow-up question>\n${question}\n\n<Standalone question>\n`;
}

/**
 * The standalone-question call: the latest history that fits both the character budget and
 * `maxBytes`. A latest message longer than the budget is kept by its end.
 */
export function standaloneRequest(client: ChatClient, turns: Turn[], question: string, maxBytes: number): ChatRequest {
  const empty: ChatRequest = { messages: [{ role: 'user', content: standaloneText('', question) }] };
  const fixed = client.requestBytes(empty, false);
  if (fixed > maxBytes) throw tooSmall(maxBytes, fixed, 'the follow-up question and its instructions');
  const byteBudget = maxBytes - fixed;
  let chars = CONVERSATION_DEFAULTS.historyChars;
  let bytes = byteBudget;
  const lines: string[] = [];
  for (let i = turns.length - 1; i >= 0; i--) {
    const line = JSON.stringify(turns[i]);
    const sep = lines.length > 0 ? 1 : 0; // the newline before the lines already taken
    const cost = jsonBytes(line) + (sep ? 2 : 0);
    if (line.length + sep <= chars && cost <= bytes) {
      lines.unshift(line);
      chars -= line.length + sep;
      bytes -= cost;
      continue;
    }
    if (lines.length === 0) {
      // The newest message alone is over budget: keep its end.
      const turn = turns[i]!;
      const role = 'user' in turn ? 'user' : 'assistant';
      const text = 'user' in turn ? turn.user : turn.assistant;
      const wrapper = JSON.stringify({ [role]: '' });
      const room = Math.min(chars - wrapper.length, bytes - jsonBytes(wrapper));
      if (room > 0) {
        let kept = cutToBytes(text, room, true);
        while (kept.length > 0 && JSON.stringify({ [role]: kept }).length > chars) kept = kept.slice(1);
        while (kept.length > 0 && jsonBytes(JSON.stringify({ [role]: kept })) > bytes) kept = kept.slice(1);
        if (kept.length > 0) lines.unshift(JSON.stringify({ [role]: kept }));
      }
    }
    break;
  }
  return { messages: [{ role: 'user', content: standaloneText(lines.join('\n'), question) }] };
}

function answerText(context: string, question: string): string {
  return `${ANSWER_INTRO}\n\n<Search results>\n${context}\n\n<Question>\n${question}\n\n<Answer>\n`;
}

/** One search's documents for the context, best first, each one line. */
export interface ContextSource {
  label?: string;
  lines: string[];
}

/**
 * The answer call: the sources' lines taken in turn (first of each search, then second of
 * each, ...) while they fit min(contextTokens x bytesPerToken, what `maxBytes` leaves). A
 * first line that does not fit at all is cut to fit, so the LLM never gets an empty context
 * when there are results. Returns the request and how many lines of each source it holds.
 */
export function answerRequest(
  client: ChatClient,
  systemPrompt: string | undefined,
  sources: ContextSource[],
  question: string,
  maxBytes: number,
  stream: boolean,
): { request: ChatRequest; used: number[] } {
  const build = (context: string): ChatRequest => ({
    messages: [...(systemPrompt ? [{ role: 'system' as const, content: systemPrompt }] : []), { role: 'user' as const, content: answerText(context, question) }],
  });
  const fixed = client.requestBytes(build(''), stream);
  if (fixed > maxBytes) throw tooSmall(maxBytes, fixed, 'the system prompt, the question and its instructions');
  let budget = Math.min(CONVERSATION_DEFAULTS.contextTokens * CONVERSATION_DEFAULTS.bytesPerToken, maxBytes - fixed);
  const taken: string[] = [];
  const used = sources.map(() => 0);
  const depth = Math.max(0, ...sources.map((s) => s.lines.length));
  let full = false;
  for (let rank = 0; rank < depth && !full; rank++) {
    for (let s = 0; s < sources.length; s++) {
      const src = sources[s]!;
      if (rank >= src.lines.length) continue;
      const line = (src.label ? `${src.label} ` : '') + src.lines[rank]!;
      const cost = jsonBytes(line) + (taken.length > 0 ? 2 : 0);
      if (cost <= budget) {
        taken.push(line);
        used[s]!++;
        budget -= cost;
        continue;
      }
      if (taken.length === 0 && budget > 0) {
        taken.push(cutToBytes(line, budget));
        used[s]!++;
      }
      full = true;
      break;
    }
  }
  return { request: build(taken.join('\n')), used };
}
