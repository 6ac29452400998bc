/**
 * `fathom ask <collection...> "question" --model <id> [--conversation <id>]`: conversational
 * search on the data directory, the same as a conversational POST /multi_search.
 *
 * Each collection is searched with `--query-by`, by default its auto-embedding fields. For
 * people the answer is printed as the LLM writes it, then the documents it was given and
 * the conversation id to continue with; `--json` prints the API's response object.
 */
import { Command, Option } from 'commander';
import { out, parseIntOption, printJson, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';

interface Opts {
  dataDir: string;
  model: string;
  conversation?: string;
  queryBy?: string;
  filterBy?: string;
  excludeFields?: string;
  perPage?: number;
  param?: string[];
  json?: boolean;
}

export function askCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('ask')
    .description('ask a question answered by an LLM from the top search results of the collections (conversational search)')
    .argument('<collection...>', 'one or more collections, then the question')
    .requiredOption('--model <id>', 'the conversation model to answer with (fathom conversations models list)')
    .option('--conversation <id>', 'continue this conversation (a follow-up question)')
    .option('--query-by <fields>', "fields to search in every collection (default: each collection's auto-embedding fields)")
    .option('--filter-by <filter>', 'a filter applied to every search')
    .option('--exclude-fields <fields>', 'fields left out of the hits (and of what the LLM is given)')
    .addOption(new Option('--per-page <n>', 'hits per search (default 10)').argParser(parseIntOption('per-page', 1, 250)))
    .option('--param <name=value...>', 'any other search parameter, for every search')
    .option('--json', 'print the response object exactly as the HTTP API returns it');
  withDataDir(cmd);
  cmd.action((args: string[], opts: Opts) =>
    run(async () => {
      if (args.length < 2) throw new UsageError('give at least one collection and then the question, e.g. fathom ask books "who wrote dune?" --model m1');
      const question = args[args.length - 1]!;
      const collections = args.slice(0, -1);
      if (question.trim() === '') throw new UsageError('the question is empty');
      const common: Record<string, unknown> = {};
      for (const p of opts.param ?? []) {
        const eq = p.indexOf('=');
        if (eq <= 0) throw new UsageError(`--param must look like name=value, got "${p}"`);
        common[p.slice(0, eq).trim()] = p.slice(eq + 1);
      }
      if (opts.filterBy !== undefined) common.filter_by = opts.filterBy;
      if (opts.excludeFields !== undefined) common.exclude_fields = opts.excludeFields;
      if (opts.perPage !== undefined) common.per_page = opts.perPage;
      const { converse } = await import('../src/conversation/rag.js');
      let sources: Array<{ collection: string; ids: string[] }> = [];
      let streamed = false;
      const res = await withEngine(
        opts.dataDir,
        async (e) => {
          const searches = collections.map((collection) => {
            let queryBy = opts.queryBy;
            if (queryBy === undefined) {
              const embedded = e.schema(collection).fields.filter((f) => f.embed !== undefined && f.id > 0);
              if (embedded.length === 0) throw new UsageError(`collection \`${collection}\` has no auto-embedding field to search; give --query-by`);
              queryBy = embedded.map((f) => f.name).join(',');
            }
            return { ...common, collection, query_by: queryBy };
          });
          return converse(
            e,
            { q: question, modelId: opts.model, ...(opts.conversation ? { conversationId: opts.conversation } : {}), searches },
            {
              onContext: (s) => (sources = s),
              ...(opts.json
                ? {}
                : {
                    stream: {
                      onStart() {
                        streamed = true;
                      },
                      onPiece(text: string) {
                        void out(text);
                      },
                    },
                  }),
            },
          );
        },
        { merges: 'off' },
      );
      if (opts.json) {
        await printJson(res, false);
        return;
      }
      const answer = res.conversation.answer;
      if (streamed && !answer.endsWith('\n')) await out('\n');
      const used = sources.filter((s) => s.ids.length > 0);
      const lines = ['', used.length ? `sources: ${used.map((s) => `${s.collection}: ${s.ids.join(', ')}`).join('; ')}` : 'sources: none (no search results)'];
      lines.push(`conversation: ${res.conversation.conversation_id} (ask a follow-up with --conversation ${res.conversation.conversation_id})`);
      await out(lines.join('\n') + '\n');
    }),
  );
  return cmd;
}
