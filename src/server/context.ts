/**
 * src/server/context.ts: what every route module is given.
 */
import type { Analytics } from '../analytics/analytics.js';
import type { Engine } from '../engine.js';
import type { SearchScope } from '../query/scope.js';
import type { Authenticator } from '../keys/auth.js';
import type { Importer } from './importer.js';
import type { RequestGate } from './gate.js';
import type { CompactReport } from './compact.js';
import type { RequestStats } from './stats.js';

export interface ServerContext {
  engine: Engine;
  auth: Authenticator;
  stats: RequestStats;
  /** Largest JSON body, bytes. */
  bodyLimit: number;
  /**
   * Called after a write to a collection. In a cluster the processes that serve HTTP do
   * not merge segments; this tells the process that does (see cluster.ts).
   */
  afterWrite(collection: string): void;
  /** Runs imports off the serving thread. */
  importer: Importer;
  /** The door every request passes (compaction closes it for a moment). */
  gate: RequestGate;
  /** Compacts the data directory across every process serving it (see compact.ts). */
  compact(): Promise<CompactReport>;
  /** `/operations/vote`: moves leadership in a cluster; a single node answers false. */
  vote(): Promise<{ success: boolean }>;
  /** Role and replication state for /debug (and /health's lag check in a cluster). */
  clusterState?(): Record<string, unknown>;
  /** One search, answered as JSON text (app.ts `searchExecutor`). Hot. */
  search(collection: string, params: Record<string, unknown>, scope?: SearchScope): Promise<string>;
  /** Search analytics, when the server runs with --enable-search-analytics (set by serve.ts). */
  analytics?: Analytics;
}
