/**
 * src/server/analytics.ts: search analytics in a serving process (serve.ts) or a cluster's
 * primary (cluster.ts).
 *
 * Every serving process opens the analytics directory to record searches and events; one
 * process, the owner, also runs the scheduled compactions and flushes, applies what a
 * crashed flush left at start-up, and flushes at the graceful stop: the only process, or
 * the primary of a cluster (after its workers have stopped answering).
 */
import { ANALYTICS_DEFAULTS } from '../defaults.js';
import type { Engine } from '../engine.js';
import { Analytics, type AnalyticsLog } from '../analytics/analytics.js';
import { analyticsDirFor } from '../analytics/pending.js';

export interface AnalyticsServeOptions {
  /** `--enable-search-analytics`: record searches and accept events. */
  enabled: boolean;
  /** `--analytics-dir` (default `<data-dir>/analytics`). */
  dir?: string;
  /** `--analytics-flush-interval`, seconds (default ANALYTICS_DEFAULTS.flushIntervalSec). */
  flushIntervalSec?: number;
}

export async function openAnalytics(
  engine: Engine,
  dataDir: string,
  opts: AnalyticsServeOptions,
  role: { owner: boolean; log: AnalyticsLog; afterWrite?: (collection: string) => void },
): Promise<Analytics> {
  const a = new Analytics(engine, {
    dir: analyticsDirFor(dataDir, opts.dir, ANALYTICS_DEFAULTS.dirName),
    flushIntervalSec: opts.flushIntervalSec,
    log: role.log,
    afterWrite: role.afterWrite,
  });
  if (role.owner) {
    try {
      await a.recover();
    } catch (e) {
      role.log('error', 'applying the batches of an interrupted analytics flush failed; the next flush tries again', { err: String(e) });
    }
    a.startTimers();
  }
  return a;
}

/** Flushes (the owner) and closes; a failed flush is reported, and what it left stays pending for the next start. */
export async function closeAnalytics(a: Analytics, owner: boolean, onError: (e: unknown) => void): Promise<void> {
  if (owner) {
    try {
      await a.flush();
    } catch (e) {
      onError(e);
    }
  }
  await a.close();
}
