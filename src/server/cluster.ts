/**
 * src/server/cluster.ts: several server processes over one data directory.
 *
 * Searches are synchronous CPU work, so one Node process uses one core. The primary
 * process forks N workers; each opens the LMDB environment itself (LMDB is safe across
 * processes), serves HTTP on the shared port (Node's cluster module hands connections
 * round-robin), and answers every route. The primary serves nothing: it owns the
 * background work that must happen once per directory:
 *
 *   - segment merges: workers open the engine with merges off and, after each write
 *     (each import batch included), send `{type: 'write', collection}`; the primary's
 *     engine queues the merge in its merge thread;
 *   - the hourly purge of expired `autodelete` keys;
 *   - search analytics' scheduled compactions and flushes, and the flush at the stop
 *     (workers record searches and events into the shared analytics directory);
 *   - restarting a worker that dies, and the graceful stop of all of them.
 *
 * bench/http/README.md has the measurements that chose processes over worker threads.
 */
import cluster, { type Worker } from 'node:cluster';
import { Engine } from '../engine.js';
import { FathomError, type ErrorCode } from '../errors.js';
import { compact, engineParticipant, processParticipant, type CompactReport, type Participant } from './compact.js';
import { closeAnalytics, openAnalytics } from './analytics.js';
import { primaryLog } from './log.js';
import type { KeyFinder } from '../keys/redact.js';
import { schedulePurge, startServer, type RunningServer, type ServeOptions } from './serve.js';

type Step = 'holdWrites' | 'holdReads' | 'closeEnv' | 'openEnv' | 'release';
type ToWorker =
  | { type: 'config'; opts: Omit<ServeOptions, 'logStream'> }
  | { type: 'stop' }
  /** A compaction step (compact.ts Participant) for this worker; `deadline` for the holds. */
  | { type: 'step'; id: number; step: Step; deadline: number }
  | { type: 'compacted'; id: number; report?: CompactReport; error?: { code: ErrorCode; message: string } };
type ToPrimary =
  | { type: 'ready' }
  | { type: 'listening'; port: number; address: string }
  | { type: 'write'; collection: string }
  | { type: 'compact'; id: number }
  | { type: 'stepped'; id: number; error?: { code: ErrorCode; message: string } };

/** An error as it crosses processes. */
function wire(e: unknown): { code: ErrorCode; message: string } {
  return e instanceof FathomError ? { code: e.code, message: e.message } : { code: 'INTERNAL', message: (e as Error).message ?? String(e) };
}

/**
 * How long the primary waits for a worker's answer to a compaction step beyond the step's
 * own deadline (the holds) or from when it was sent (the others, which wait for nothing
 * else), ms: a worker that does not answer by then is taken as gone.
 */
const STEP_GRACE_MS = 5000;

/** Sends to a worker that may have died meanwhile (a send to a dead one must not end the primary). */
function sendTo(w: Worker, m: ToWorker): void {
  if (!w.isDead()) w.send(m, () => undefined);
}

/** Restarts of crashed workers allowed per minute before the primary gives up. */
const MAX_RESTARTS_PER_MINUTE = 10;
const RESTART_DELAY_MS = 1000;

export interface RunningCluster {
  port: number;
  address: string;
  stop(): Promise<void>;
  /** Resolves when every worker has exited (after stop, or when they could not be kept up). */
  done: Promise<void>;
}

/** Runs in the primary: forks `processes` workers and keeps them up until stop(). */
export async function startCluster(opts: ServeOptions, processes: number, exec?: { file: string; args: string[] }): Promise<RunningCluster> {
  let keys: (() => KeyFinder) | undefined;
  const log = primaryLog(opts.logLevel ?? 'info', undefined, () => keys?.());
  const engine = Engine.open(opts.dataDir, { merges: 'worker', log: { warn: (fields, msg) => log('warn', msg, { ...fields, err: String(fields.err) }), error: (fields, msg) => log('error', msg, { ...fields, err: String(fields.err) }) } });
  keys = engine.keyFinder(opts.apiKey);
  const cancelPurge = schedulePurge(engine, (e) => log('error', 'purging expired keys failed', { err: String(e) }));
  const analytics = opts.analytics?.enabled ? await openAnalytics(engine, opts.dataDir, opts.analytics, { owner: true, log }) : undefined;
  if (exec) cluster.setupPrimary({ exec: exec.file, args: exec.args });
  const { logStream: _ignored, ...workerOpts } = opts;
  let stopping = false;
  const restarts: number[] = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  // Every worker asks for the port as given: with 0, the cluster module hands them all
  // the same free port (asking for the one the first got would be a second bind).
  let port = opts.port ?? 0;
  let address = opts.address ?? '0.0.0.0';

  const fork = (): Promise<Worker> =>
    new Promise((resolve, reject) => {
      const w = cluster.fork({ FATHOM_SERVE_ROLE: 'worker' });
      let listening = false;
      w.on('message', (m: ToPrimary) => {
        // The worker asks once it listens for messages (one sent earlier would be lost).
        if (m.type === 'ready') w.send({ type: 'config', opts: workerOpts } satisfies ToWorker);
        else if (m.type === 'listening') {
          listening = true;
          port = m.port;
          address = m.address;
          resolve(w);
        } else if (m.type === 'write') engine.maintain(m.collection);
        else if (m.type === 'compact') void runCompaction(w, m.id);
        else if (m.type === 'stepped') {
          const p = steps.get(m.id);
          steps.delete(m.id);
          if (m.error) p?.reject(new FathomError(m.error.code, m.error.message));
          else p?.resolve();
        }
      });
      w.on('exit', (code, signal) => {
        for (const [id, p] of steps) {
          if (p.worker !== w) continue;
          steps.delete(id);
          p.reject(new FathomError('SERVICE_UNAVAILABLE', `server process ${w.process.pid} exited during the compaction`));
        }
        if (!listening) {
          reject(new Error(`a server process exited (${signal ?? `code ${code}`}) before it could listen; see the log above`));
          return;
        }
        if (stopping) return;
        log('error', 'a server process died; starting another', { worker: w.process.pid, code, signal });
        const now = Date.now();
        restarts.push(now);
        while (restarts.length && restarts[0]! < now - 60_000) restarts.shift();
        if (restarts.length > MAX_RESTARTS_PER_MINUTE) {
          log('fatal', 'server processes keep dying; stopping', {});
          void stop();
          return;
        }
        // A moment's pause: when the whole process group is being stopped, the primary's
        // own signal arrives meanwhile and no replacement is started.
        // (after a compaction in progress: a process that opened the file before the swap would keep the old one)
        setTimeout(() => {
          void compacting.then(() => {
            if (!stopping) fork().catch((e) => log('error', 'could not restart a server process', { err: String(e) }));
          });
        }, RESTART_DELAY_MS);
      });
    });

  // Compaction: the primary orchestrates, every worker and the primary's own engine take part.
  // Every step is answered or given up on (a worker that died or hangs): no compaction waits for ever.
  let nextStep = 1;
  const steps = new Map<number, { worker: Worker; resolve: () => void; reject: (e: Error) => void }>();
  const step = (w: Worker, s: Step, deadline = 0) =>
    new Promise<void>((resolve, reject) => {
      const id = nextStep++;
      const timer = setTimeout(
        () => {
          if (!steps.delete(id)) return;
          reject(new FathomError('SERVICE_UNAVAILABLE', `server process ${w.process.pid} did not answer (its ${s} step)`));
        },
        Math.max(0, deadline - Date.now()) + STEP_GRACE_MS,
      );
      const done = <A extends unknown[]>(f: (...a: A) => void) => (...a: A) => {
        clearTimeout(timer);
        f(...a);
      };
      steps.set(id, { worker: w, resolve: done(resolve), reject: done(reject) });
      if (w.isDead()) steps.get(id)!.reject(new FathomError('SERVICE_UNAVAILABLE', `server process ${w.process.pid} exited during the compaction`));
      else sendTo(w, { type: 'step', id, step: s, deadline });
    });
  const workerParticipant = (w: Worker): Participant => ({
    holdWrites: (deadline) => step(w, 'holdWrites', deadline),
    holdReads: (deadline) => step(w, 'holdReads', deadline),
    closeEnv: () => step(w, 'closeEnv'),
    openEnv: () => step(w, 'openEnv'),
    release: () => step(w, 'release'),
  });
  let compacting: Promise<unknown> = Promise.resolve();
  const runCompaction = (asker: Worker, id: number) => {
    // one compaction at a time
    compacting = compacting.then(async () => {
      const workers = Object.values(cluster.workers ?? {}).filter((x): x is Worker => !!x && !x.isDead());
      try {
        const report = await compact(engine, [engineParticipant(engine), ...workers.map(workerParticipant)], opts.limits?.compactQuietMs);
        sendTo(asker, { type: 'compacted', id, report });
      } catch (e) {
        log('error', 'compaction failed', { err: (e as Error).message });
        sendTo(asker, { type: 'compacted', id, error: wire(e) });
      }
    });
  };

  // The first worker picks the port (when 0); the others share it.
  try {
    await fork();
    await Promise.all(Array.from({ length: processes - 1 }, fork));
  } catch (e) {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    cancelPurge();
    await analytics?.close();
    await engine.close();
    throw e;
  }
  log('info', 'serving', { address, port, processes, dataDir: engine.dir });

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true;
      cancelPurge();
      log('info', 'stopping server processes');
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
      await Promise.all(
        workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              w.once('exit', () => resolve());
              try {
                w.send({ type: 'stop' } satisfies ToWorker);
              } catch {
                w.kill();
              }
            }),
        ),
      );
      if (analytics) await closeAnalytics(analytics, true, (e) => log('error', 'the analytics flush at the stop failed', { err: String(e) }));
      await engine.close();
      log('info', 'stopped');
      resolveDone();
    })());
  return { port, address, stop, done };
}

/** True in a process forked by startCluster. */
export function isClusterWorker(): boolean {
  return cluster.isWorker && process.env.FATHOM_SERVE_ROLE === 'worker';
}

/**
 * Runs in a worker: waits for its configuration, serves until told to stop (or
 * SIGTERM/SIGINT), then resolves.
 */
export async function runClusterWorker(): Promise<void> {
  const opts = await new Promise<ServeOptions>((resolve) => {
    const on = (m: ToWorker) => {
      if (m.type === 'config') {
        process.off('message', on);
        resolve(m.opts);
      }
    };
    process.on('message', on);
    process.send?.({ type: 'ready' } satisfies ToPrimary);
  });
  // Writes are reported to the primary at most once per collection per tick.
  const pending = new Set<string>();
  let flush: NodeJS.Immediate | undefined;
  const afterWrite = (collection: string) => {
    pending.add(collection);
    flush ??= setImmediate(() => {
      flush = undefined;
      for (const c of pending) process.send?.({ type: 'write', collection: c } satisfies ToPrimary);
      pending.clear();
    });
  };
  // Compaction is orchestrated by the primary: this worker asks, and takes its steps when told.
  let nextCompaction = 1;
  const compactions = new Map<number, { resolve: (r: CompactReport) => void; reject: (e: Error) => void }>();
  let participant: Participant | undefined;
  // Steps run one after another: a release that arrives while a hold still waits (the
  // primary gave up on it) runs once the hold has ended, by its deadline.
  let stepping: Promise<unknown> = Promise.resolve();
  // (steps arrive only after this worker has started: the primary orchestrates workers it knows listen)
  process.on('message', (m: ToWorker) => {
    if (m.type === 'compacted') {
      const p = compactions.get(m.id);
      compactions.delete(m.id);
      if (m.error) p?.reject(new FathomError(m.error.code, m.error.message));
      else p?.resolve(m.report!);
    } else if (m.type === 'step') {
      stepping = stepping.then(() =>
        participant![m.step](m.deadline).then(
          () => process.send?.({ type: 'stepped', id: m.id } satisfies ToPrimary),
          (e) => process.send?.({ type: 'stepped', id: m.id, error: wire(e) } satisfies ToPrimary),
        ),
      );
    }
  });
  const askCompaction = () =>
    new Promise<CompactReport>((resolve, reject) => {
      const id = nextCompaction++;
      compactions.set(id, { resolve, reject });
      process.send?.({ type: 'compact', id } satisfies ToPrimary);
    });
  const server: RunningServer = await startServer(opts, {
    engine: { merges: 'off' },
    role: 'worker',
    afterWrite,
    purgeKeys: false,
    analyticsOwner: false,
    compact: () => askCompaction(),
  });
  participant = processParticipant(server.context);
  process.send?.({ type: 'listening', port: server.port, address: server.address } satisfies ToPrimary);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.on('message', (m: ToWorker) => m.type === 'stop' && stop());
    process.once('SIGTERM', stop);
    // Ctrl-C reaches the whole process group; the primary coordinates the stop.
    process.on('SIGINT', () => {});
    process.once('disconnect', stop);
  });
  await server.stop();
}
