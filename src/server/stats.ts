/**
 * src/server/stats.ts: what `/stats.json` and `/metrics.json` report.
 *
 * Stats are kept per process over a sliding window of STATS_WINDOW_S one-second buckets:
 * requests per second and mean latency per `METHOD /route`, and for the search, write,
 * import and delete families as the reference reports them. With several server
 * processes each answers with its own figures.
 *
 * Hot: `record` runs once per request (a few map updates).
 */
import fs from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const STATS_WINDOW_S = 10;

interface Bucket {
  second: number;
  count: Map<string, number>;
  ms: Map<string, number>;
}

export type Family = 'search' | 'write' | 'import' | 'delete' | undefined;

function add(m: Map<string, number>, k: string, v: number) {
  m.set(k, (m.get(k) ?? 0) + v);
}

export class RequestStats {
  private buckets: Bucket[] = [];

  record(endpoint: string, family: Family, ms: number, nowMs = Date.now()): void {
    const second = Math.floor(nowMs / 1000);
    let b = this.buckets[this.buckets.length - 1];
    if (!b || b.second !== second) {
      b = { second, count: new Map(), ms: new Map() };
      this.buckets.push(b);
      while (this.buckets.length > 0 && this.buckets[0]!.second <= second - STATS_WINDOW_S) this.buckets.shift();
    }
    add(b.count, endpoint, 1);
    add(b.ms, endpoint, ms);
    add(b.count, '\u0000total', 1);
    if (family) {
      add(b.count, `\u0000${family}`, 1);
      add(b.ms, `\u0000${family}`, ms);
    }
  }

  snapshot(nowMs = Date.now()): Record<string, unknown> {
    const second = Math.floor(nowMs / 1000);
    const count = new Map<string, number>();
    const ms = new Map<string, number>();
    for (const b of this.buckets) {
      if (b.second <= second - STATS_WINDOW_S) continue;
      for (const [k, v] of b.count) add(count, k, v);
      for (const [k, v] of b.ms) add(ms, k, v);
    }
    const rps = (k: string) => round((count.get(k) ?? 0) / STATS_WINDOW_S);
    const lat = (k: string) => round((ms.get(k) ?? 0) / Math.max(count.get(k) ?? 0, 1));
    const latency: Record<string, number> = {};
    const perSecond: Record<string, number> = {};
    for (const k of count.keys()) {
      if (k.startsWith('\u0000')) continue;
      latency[k] = lat(k);
      perSecond[k] = rps(k);
    }
    const out: Record<string, unknown> = { latency_ms: latency, requests_per_second: perSecond };
    for (const f of ['search', 'write', 'import', 'delete']) {
      out[`${f}_latency_ms`] = lat(`\u0000${f}`);
      out[`${f}_requests_per_second`] = rps(`\u0000${f}`);
    }
    out.total_requests_per_second = rps('\u0000total');
    out.pending_write_batches = 0;
    return out;
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Event-loop delay of this process since the last /metrics.json (a blocked loop delays every request). */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

let lastCpu = { at: process.hrtime.bigint(), usage: os.cpus().map((c) => c.times) };

/** Bytes received and sent by every network interface of the host (Linux /proc/net/dev), or undefined elsewhere. */
function networkBytes(): { received: number; sent: number } | undefined {
  let text: string;
  try {
    text = fs.readFileSync('/proc/net/dev', 'utf8');
  } catch {
    return undefined;
  }
  let received = 0;
  let sent = 0;
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const f = line.slice(colon + 1).trim().split(/\s+/).map(Number);
    received += f[0] ?? 0;
    sent += f[8] ?? 0;
  }
  return { received, sent };
}

/** System and process figures; values are strings, as the reference's clients expect. */
export function systemMetrics(dataDir: string): Record<string, string> {
  const cpus = os.cpus();
  const out: Record<string, string> = {};
  let busyAll = 0;
  let totalAll = 0;
  cpus.forEach((c, i) => {
    const prev = lastCpu.usage[i] ?? c.times;
    const busy = c.times.user + c.times.nice + c.times.sys + c.times.irq - (prev.user + prev.nice + prev.sys + prev.irq);
    const total = busy + (c.times.idle - prev.idle);
    busyAll += busy;
    totalAll += total;
    out[`system_cpu${i + 1}_active_percentage`] = total > 0 ? ((100 * busy) / total).toFixed(2) : '0.00';
  });
  lastCpu = { at: process.hrtime.bigint(), usage: cpus.map((c) => c.times) };
  out.system_cpu_active_percentage = totalAll > 0 ? ((100 * busyAll) / totalAll).toFixed(2) : '0.00';
  out.system_memory_total_bytes = String(os.totalmem());
  out.system_memory_used_bytes = String(os.totalmem() - os.freemem());
  try {
    const s = fs.statfsSync(dataDir);
    out.system_disk_total_bytes = String(s.blocks * s.bsize);
    out.system_disk_used_bytes = String((s.blocks - s.bfree) * s.bsize);
  } catch {
    /* not every platform has statfs */
  }
  const mem = process.memoryUsage();
  out.fathom_memory_resident_bytes = String(mem.rss);
  out.fathom_memory_heap_used_bytes = String(mem.heapUsed);
  out.fathom_memory_external_bytes = String(mem.external);
  out.fathom_event_loop_delay_p50_ms = (loopDelay.percentile(50) / 1e6).toFixed(2);
  out.fathom_event_loop_delay_p99_ms = (loopDelay.percentile(99) / 1e6).toFixed(2);
  out.fathom_event_loop_delay_max_ms = (loopDelay.max / 1e6).toFixed(2);
  loopDelay.reset();
  // the names the reference's clients and dashboards read: network counters of the host,
  // and its allocator's memory figures as this process's V8 heap and resident set give them
  const net = networkBytes();
  if (net) {
    out.system_network_received_bytes = String(net.received);
    out.system_network_sent_bytes = String(net.sent);
  }
  const allocated = mem.heapUsed + mem.external;
  out.typesense_memory_active_bytes = String(mem.heapTotal + mem.external);
  out.typesense_memory_allocated_bytes = String(allocated);
  out.typesense_memory_resident_bytes = String(mem.rss);
  out.typesense_memory_mapped_bytes = String(mem.rss);
  out.typesense_memory_metadata_bytes = String(Math.max(0, mem.rss - mem.heapTotal - mem.external));
  out.typesense_memory_retained_bytes = String(Math.max(0, mem.heapTotal - mem.heapUsed));
  out.typesense_memory_fragmentation_ratio = mem.rss > 0 ? Math.max(0, 1 - allocated / mem.rss).toFixed(2) : '0.00';
  try {
    out.fathom_data_bytes = String(fs.statSync(`${dataDir}/data.mdb`).size);
  } catch {
    /* a fresh directory has no data file yet */
  }
  return out;
}
