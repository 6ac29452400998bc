/**
 * commands/explore/search-loop.ts: runs the current search plan, debounced and sequenced.
 *
 * The UI calls `request(plan)` on every change; the loop waits until the changes pause
 * for `debounceMs`, then runs the main search and the facet-only searches together under
 * one ticket and reports the answer only if no newer search was started meanwhile.
 */
import { oneLineMessage, type FacetResult, type SearchClient, type SearchResponse } from './client.js';
import { mergeFacetCounts } from './facets.js';
import { planKey, type SearchPlan } from './params.js';
import { Sequencer } from './sequencer.js';

export interface LoopEvents {
  onSearching(): void;
  onResults(response: SearchResponse, facetCounts: FacetResult[]): void;
  onError(message: string): void;
}

export const DEFAULT_DEBOUNCE_MS = 120;

/** Runs one plan: the main search and one facet-only search per selected field. */
export async function runPlan(client: SearchClient, collection: string, plan: SearchPlan, signal?: AbortSignal): Promise<{ response: SearchResponse; facetCounts: FacetResult[] }> {
  const [response, ...own] = await Promise.all([
    client.search(collection, plan.main, signal),
    ...plan.facetQueries.map((f) => client.search(collection, f.params, signal)),
  ]);
  const ownCounts = own.flatMap((r, i) => r!.facet_counts.filter((c) => c.field_name === plan.facetQueries[i]!.field));
  return { response: response!, facetCounts: mergeFacetCounts(response!.facet_counts ?? [], ownCounts) };
}

export class SearchLoop {
  private readonly sequencer = new Sequencer();
  private timer: NodeJS.Timeout | null = null;
  private lastKey: string | null = null;
  private disposed = false;

  constructor(
    private readonly client: SearchClient,
    private readonly collection: string,
    private readonly events: LoopEvents,
    private readonly debounceMs = DEFAULT_DEBOUNCE_MS,
  ) {}

  /** Asks for `plan`'s results; the same plan twice in a row runs once. */
  request(plan: SearchPlan, opts: { immediate?: boolean } = {}): void {
    if (this.disposed) return;
    const key = planKey(plan);
    if (key === this.lastKey) return;
    this.lastKey = key;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (opts.immediate || this.debounceMs <= 0) void this.run(plan);
    else this.timer = setTimeout(() => void this.run(plan), this.debounceMs);
  }

  /** Runs `plan` now; resolves when its answer was shown or dropped. */
  async run(plan: SearchPlan): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ticket = this.sequencer.next();
    this.events.onSearching();
    try {
      const { response, facetCounts } = await runPlan(this.client, this.collection, plan, ticket.signal);
      if (this.sequencer.isCurrent(ticket)) this.events.onResults(response, facetCounts);
    } catch (e) {
      if (this.sequencer.isCurrent(ticket)) this.events.onError(oneLineMessage(e));
    }
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sequencer.cancel();
  }
}
