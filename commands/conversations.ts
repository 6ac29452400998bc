/**
 * `fathom conversations models list|create|get|delete` and `fathom conversations list|get|delete`:
 * conversation models and stored conversations, straight on the data directory (the same
 * records `fathom serve` uses; a running server sees changes at once).
 *
 * `models create` checks the model with one real call to its provider, as the API does. The
 * api key may come from `--api-key`, from the environment variable named by `--api-key-env`
 * (so that it stays out of shell history and the process list), or from a JSON file; it is
 * only ever printed masked.
 */
import { Command, Option } from 'commander';
import { parseIntOption, printJson, readAllInput, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';
import { ADMIN_ACTOR } from '../src/conversation/history.js';

interface ModelOpts {
  dataDir: string;
  id?: string;
  modelName?: string;
  apiKey?: string;
  apiKeyEnv?: string;
  accountId?: string;
  vllmUrl?: string;
  openaiUrl?: string;
  apiUrl?: string;
  systemPrompt?: string;
  maxBytes?: number;
  ttl?: number;
  timeoutMs?: number;
  historyCollection?: string;
  file?: string;
  json?: boolean;
  jsonl?: boolean;
}

/** The model body from a JSON file (or stdin) and/or flags; flags win. */
async function modelBody(opts: ModelOpts): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  if (opts.file !== undefined) {
    const text = await readAllInput(opts.file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`${opts.file === '-' ? 'stdin' : opts.file} is not JSON: ${(e as Error).message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('the model file must hold one JSON object');
    body = parsed as Record<string, unknown>;
  }
  if (opts.apiKeyEnv !== undefined) {
    const v = process.env[opts.apiKeyEnv];
    if (!v) throw new UsageError(`--api-key-env: the environment variable ${opts.apiKeyEnv} is not set`);
    body.api_key = v;
  }
  const flags: Array<[keyof ModelOpts, string]> = [
    ['id', 'id'],
    ['modelName', 'model_name'],
    ['apiKey', 'api_key'],
    ['accountId', 'account_id'],
    ['vllmUrl', 'vllm_url'],
    ['openaiUrl', 'openai_url'],
    ['apiUrl', 'api_url'],
    ['systemPrompt', 'system_prompt'],
    ['maxBytes', 'max_bytes'],
    ['ttl', 'ttl'],
    ['timeoutMs', 'timeout_ms'],
    ['historyCollection', 'history_collection'],
  ];
  for (const [flag, field] of flags) if (opts[flag] !== undefined) body[field] = opts[flag];
  if (body.model_name === undefined) throw new UsageError('give --model-name (e.g. openai/gpt-4o-mini) or a JSON file with `model_name`');
  return body;
}

function modelsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('models').description('conversation models: the LLMs conversational search answers with');
  withDataDir(
    cmd
      .command('create')
      .description('create a model after checking it with one call to its provider; prints it with the key masked')
      .argument('[file]', 'a JSON file with the model (`-`: stdin); flags override its fields')
      .option('--id <id>', 'the model id (default: generated)')
      .option('--model-name <vendor/model>', 'openai/<model>, cloudflare/<model> or vllm/<model>')
      .option('--api-key <key>', "the provider's API key")
      .option('--api-key-env <name>', 'read the API key from this environment variable')
      .option('--account-id <id>', 'Cloudflare account id')
      .option('--vllm-url <url>', 'base URL of a vLLM server, e.g. http://localhost:8000')
      .option('--openai-url <url>', 'base URL of an OpenAI-compatible server (default https://api.openai.com)')
      .option('--api-url <url>', 'base URL replacing the provider\'s own')
      .option('--system-prompt <text>', 'instructions sent with every answer')
      .addOption(new Option('--max-bytes <n>', 'largest request sent to the LLM per call, bytes (required)').argParser(parseIntOption('max-bytes', 1, Number.MAX_SAFE_INTEGER)))
      .addOption(new Option('--ttl <seconds>', 'how long its conversations are kept after their last message (default 86400)').argParser(parseIntOption('ttl', 1, 2 ** 31 - 1)))
      .addOption(new Option('--timeout-ms <ms>', 'time allowed per LLM call (default 60000)').argParser(parseIntOption('timeout-ms', 1, 600_000)))
      .option('--history-collection <name>', 'accepted for Typesense compatibility; histories live in the data directory'),
  ).action((file: string | undefined, opts: ModelOpts) =>
    run(async () => {
      const body = await modelBody({ ...opts, file });
      await printJson(await withEngine(opts.dataDir, (e) => e.conversationModels().create(body), { merges: 'off' }));
    }),
  );
  withDataDir(withListOutput(cmd.command('list').description('list conversation models (keys masked)'))).action((opts: ModelOpts) =>
    run(async () => {
      const mode = listOutput(opts);
      const models = await withEngine(opts.dataDir, (e) => e.conversationModels().list(), { merges: 'off' });
      await printList(mode, models, {
        none: 'no conversation models\n',
        text: (models) => models.map((m) => `${m.id}  ${m.model_name}  max_bytes=${m.max_bytes}  ttl=${m.ttl}${m.api_key ? `  api_key=${m.api_key}` : ''}\n`).join(''),
      });
    }),
  );
  withDataDir(cmd.command('get').description('show a conversation model (key masked)').argument('<id>')).action((id: string, opts: ModelOpts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.conversationModels().get(id), { merges: 'off' }));
    }),
  );
  withDataDir(cmd.command('delete').description('delete a conversation model').argument('<id>')).action((id: string, opts: ModelOpts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.conversationModels().delete(id), { merges: 'off' }));
    }),
  );
  return cmd;
}

export function conversationsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('conversations').description('conversation models and the conversations of conversational search');
  cmd.addCommand(modelsCommand(run));
  withDataDir(withListOutput(cmd.command('list').description('list live conversations, most recent first'))).action((opts: { dataDir: string; json?: boolean; jsonl?: boolean }) =>
    run(async () => {
      const mode = listOutput(opts);
      const all = await withEngine(opts.dataDir, (e) => e.listConversations(ADMIN_ACTOR), { merges: 'off' });
      const line = (c: (typeof all)[number]) => {
        const first = c.conversation.find((t) => 'user' in t) as { user: string } | undefined;
        const when = new Date(c.last_updated * 1000).toISOString().replace('.000Z', 'Z');
        const n = c.conversation.filter((t) => 'user' in t).length;
        return `${c.id}  ${n} question${n === 1 ? '' : 's'}  last ${when}  ttl=${c.ttl}  ${first ? JSON.stringify(first.user.length > 60 ? first.user.slice(0, 57) + '...' : first.user) : ''}\n`;
      };
      await printList(mode, all, { asJson: { conversations: all }, none: 'no conversations\n', text: (all) => all.map(line).join('') });
    }),
  );
  withDataDir(cmd.command('get').description('print a conversation').argument('<id>')).action((id: string, opts: { dataDir: string }) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.getConversation(id, ADMIN_ACTOR), { merges: 'off' }));
    }),
  );
  withDataDir(cmd.command('delete').description('delete a conversation').argument('<id>')).action((id: string, opts: { dataDir: string }) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.deleteConversation(id, ADMIN_ACTOR), { merges: 'off' }));
    }),
  );
  return cmd;
}
