/**
 * src/cluster/replicator.ts: a node of a Fathom cluster, replicated through NATS JetStream.
 *
 *   client ──write──▶ node A ──publish──▶ JetStream stream FATHOM (3 replicas, quorum ack)
 *                       ▲                      │ ordered consumer per node
 *                       │ result of A's own    ▼
 *                       └──── application ◀── apply in stream order, on A, B and C,
 *                                             each in its own LMDB data directory
 *
 * - Writes: any node takes them. The node settles what is not deterministic (a generated
 *   key value, embeddings, an LLM's answer) and publishes one command (command.ts); it
 *   answers its client once JetStream has acknowledged the command (a quorum of its
 *   servers stored it) and this node has applied it, so the client reads its own write here.
 * - Applying: every node reads the stream from the sequence after the last it applied and
 *   applies each command in its own transactions, which also record the sequence
 *   (store.ts transact). A restart resumes exactly there: nothing applied twice or skipped.
 *   A command that fails the same way everywhere (a 4xx: the collection exists...) is
 *   applied as a failure; one that fails for reasons of its own node (a full disk) is
 *   retried and the node reports itself unhealthy meanwhile.
 * - Bounded stream: every `snapshotEvery` commands the leader stores a snapshot of its data
 *   directory (a compacted LMDB copy and the sequence it holds) in a JetStream object store
 *   and purges the stream up to `keepAfterSnapshot` commands before that sequence. A node
 *   whose next sequence was purged (a new node, or one down for long) starts from the
 *   snapshot, then replays the rest of the stream.
 * - Leadership: the cluster's leader is the node whose NATS server leads the stream;
 *   `/operations/vote` asks JetStream to step that leader down, and another is elected.
 * - Health: a node behind the stream by more than `healthyLag` commands, or stuck on one,
 *   answers `/health` with `{"ok": false}` so that load balancers send reads elsewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { ObjectStore } from '@nats-io/obj';
import { applying } from '../clock.js';
import { CLUSTER_DEFAULTS, OPERATIONS_DEFAULTS } from '../defaults.js';
import { settlesBy } from '../deadline.js';
import type { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import { APPLIED_KEY, openStore, write } from '../storage/store.js';
import { copyEnvironment, swapDataFile } from '../storage/copy.js';
import { applyCommand } from './apply.js';
import { decode, encode, replicateThrough, type Command, type Envelope } from './command.js';

export interface ClusterOptions {
  /** NATS server URLs; this node's own server first. */
  servers: string[];
  /** This node's name (unique in the cluster). */
  nodeName: string;
  /** Stream name (default CLUSTER_DEFAULTS.stream). */
  stream?: string;
  /** Copies of the stream (default CLUSTER_DEFAULTS.replicas). */
  replicas?: number;
  /** Commands behind the stream beyond which /health says not ok (default CLUSTER_DEFAULTS.healthyLag). */
  healthyLag?: number;
  /** Commands between snapshots (default CLUSTER_DEFAULTS.snapshotEvery). */
  snapshotEvery?: number;
  /** Commands kept in the stream before a snapshot's sequence (default CLUSTER_DEFAULTS.keepAfterSnapshot). */
  keepAfterSnapshot?: number;
}

/**
 * Brings the serving process to a standstill around a restore (src/server/compact.ts
 * Participant, without the applier's own pause: the applier is the one restoring).
 */
export interface RestoreQuiet {
  /** Writes, then reads, held by `deadline` (ms since the epoch), or throws saying why. */
  holdWrites(deadline: number): Promise<void>;
  holdReads(deadline: number): Promise<void>;
  closeEnv(): Promise<void>;
  openEnv(): Promise<void>;
  /** Lets everything go (after a hold that failed). */
  release(): Promise<void>;
}

export type ClusterLog = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

interface Waiter {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

const SNAPSHOT_OBJECT = 'latest';

/** Loads the NATS client libraries (only a cluster node needs them), through their CommonJS builds as lmdb is (store.ts). */
async function nats() {
  const req = createRequire(import.meta.url);
  return {
    transport: req('@nats-io/transport-node') as typeof import('@nats-io/transport-node'),
    jetstream: req('@nats-io/jetstream') as typeof import('@nats-io/jetstream'),
    obj: req('@nats-io/obj') as typeof import('@nats-io/obj'),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Replicator {
  private readonly stream: string;
  private readonly subject: string;
  private readonly waiters = new Map<string, Waiter>();
  private applied: number;
  /** Last sequence the stream holds, as last heard (from the stream's leader, a publish or the reader). */
  private last = 0;
  private leader = '';
  private stuck: string | undefined;
  private stopped = false;
  private paused: Promise<void> | null = null;
  private resumeApply: () => void = () => {};
  private applyIdle: Promise<void> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private lastSnapshotSeq = 0;
  private snapshotting = false;
  private maxPayload = 1 << 20;
  /** The stream reader in use (stopped by the watchdog when it stalls). */
  private messages: { close(): Promise<void | Error> } | undefined;
  /** When a command was last applied, or the reader (re)started. */
  private lastProgress = Date.now();
  private applyingNow = false;
  /** The name of this node's own NATS server (its first URL), once seen. */
  private ownServer = '';
  /** Set by the server: how to quiet it for a restore while it serves. */
  quiesce?: () => RestoreQuiet;

  private constructor(
    private readonly engine: Engine,
    private readonly opts: Required<ClusterOptions>,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly snapshots: ObjectStore,
    private readonly log: ClusterLog,
  ) {
    this.stream = opts.stream;
    this.subject = `${opts.stream}.log`;
    this.applied = (engine.store.meta.get(APPLIED_KEY) as number | undefined) ?? 0;
    this.maxPayload = nc.info?.max_payload ?? this.maxPayload;
  }

  /**
   * Joins the cluster: connects, makes sure the stream exists, restores from the latest
   * snapshot when the stream no longer holds this node's next command, and starts applying.
   */
  static async start(engine: Engine, options: ClusterOptions, log: ClusterLog): Promise<Replicator> {
    const opts: Required<ClusterOptions> = {
      stream: CLUSTER_DEFAULTS.stream,
      replicas: CLUSTER_DEFAULTS.replicas,
      healthyLag: CLUSTER_DEFAULTS.healthyLag,
      snapshotEvery: CLUSTER_DEFAULTS.snapshotEvery,
      keepAfterSnapshot: CLUSTER_DEFAULTS.keepAfterSnapshot,
      ...options,
    };
    const lib = await nats();
    const deadline = Date.now() + CLUSTER_DEFAULTS.joinTimeoutMs;
    let nc: NatsConnection | undefined;
    for (;;) {
      try {
        nc = await lib.transport.connect({ servers: opts.servers, name: `fathom-${opts.nodeName}`, noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new FathomError('SERVICE_UNAVAILABLE', `cannot reach any NATS server of ${opts.servers.join(', ')}: ${(e as Error).message}`);
        await sleep(500);
      }
    }
    // (JetStream may not answer yet: a cluster that is starting elects its meta leader first)
    let jsm: JetStreamManager | undefined;
    for (;;) {
      try {
        jsm = await lib.jetstream.jetstreamManager(nc, { timeout: CLUSTER_DEFAULTS.apiTimeoutMs });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new FathomError('SERVICE_UNAVAILABLE', `JetStream did not answer on ${opts.servers.join(', ')}: ${(e as Error).message}`);
        await sleep(500);
      }
    }
    // short API timeouts: while JetStream elects a leader, a reader is recreated by retrying
    const js = lib.jetstream.jetstream(nc, { timeout: CLUSTER_DEFAULTS.apiTimeoutMs });
    // The JetStream cluster may still be electing its meta leader: retry until it answers.
    let info;
    for (;;) {
      try {
        info = await jsm.streams.info(opts.stream).catch(async (e: Error) => {
          if (!/not found/i.test(e.message)) throw e;
          return jsm.streams.add({
            name: opts.stream,
            subjects: [`${opts.stream}.log`],
            num_replicas: opts.replicas,
            storage: lib.jetstream.StorageType.File,
            max_msg_size: -1,
            duplicate_window: 120 * 1e9,
          });
        });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new FathomError('SERVICE_UNAVAILABLE', `the JetStream cluster did not answer: ${(e as Error).message}`);
        await sleep(500);
      }
    }
    let snapshots: ObjectStore | undefined;
    for (;;) {
      try {
        snapshots = await new lib.obj.Objm(nc).create(`${opts.stream}_snapshots`, { replicas: opts.replicas });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new FathomError('SERVICE_UNAVAILABLE', `the JetStream object store did not answer: ${(e as Error).message}`);
        await sleep(500);
      }
    }
    const r = new Replicator(engine, opts, nc, js, jsm, snapshots, log);
    r.last = info.state.last_seq;
    r.leader = info.cluster?.leader ?? '';
    const stored = engine.store.meta.get('cluster_stream') as { name: string; created: string } | undefined;
    if (stored && stored.created !== info.created) {
      throw new FathomError('DATA_DIR', `this data directory followed another stream \`${stored.name}\` (created ${stored.created}); start the node with an empty data directory`);
    }
    if (r.applied > info.state.last_seq) {
      throw new FathomError('DATA_DIR', `this data directory has applied command ${r.applied}, but the stream ends at ${info.state.last_seq}: it belongs to another cluster`);
    }
    while (info.state.messages > 0 && r.applied + 1 < info.state.first_seq) {
      try {
        await r.restore(info.state.first_seq);
      } catch (e) {
        // (a snapshot replaced while it was read: read the new one)
        if (!(e instanceof FathomError && e.code === 'SERVICE_UNAVAILABLE') || Date.now() > deadline) throw e;
        log('warn', (e as Error).message);
      }
    }
    if (!stored) await write(engine.store, () => engine.store.meta.put('cluster_stream', { name: opts.stream, created: info.created, node: opts.nodeName }));
    r.noteOwnServer();
    replicateThrough(engine.store, (cmd) => r.submit(cmd));
    r.loop = r.applyLoop();
    void r.watchConnection();
    r.timers.push(setInterval(() => void r.watch(), CLUSTER_DEFAULTS.watchIntervalMs));
    for (const t of r.timers) t.unref();
    log('info', 'joined the cluster', { node: opts.nodeName, stream: opts.stream, applied: r.applied, streamLast: r.last, leader: r.leader });
    return r;
  }

  // ---------------------------------------------------------------------------
  // Writing
  // ---------------------------------------------------------------------------

  /** Appends a command and resolves with this node's result of applying it. */
  async submit(cmd: Command): Promise<unknown> {
    if (this.stopped) throw new FathomError('SERVICE_UNAVAILABLE', 'this node is leaving the cluster');
    const env: Envelope = { id: randomUUID(), at: Date.now(), cmd };
    const data = encode(env);
    if (data.byteLength > this.maxPayload - 1024) return this.submitSplit(cmd, data.byteLength);
    const applied = new Promise<unknown>((resolve, reject) => this.waiters.set(env.id, { resolve, reject }));
    applied.catch(() => undefined);
    let retried: boolean;
    try {
      retried = await this.publish(env.id, data);
    } catch (e) {
      this.waiters.delete(env.id);
      throw e;
    }
    // The command is in the stream: if this node's reader applies nothing for a moment, it
    // may be reading through a server that died; read again rather than wait for heartbeats.
    // After an election (the stream refused the write for a while) that is likely: a reader's
    // consumer lives on the server that led the stream when it was made. A reader that is
    // alive applies the command within milliseconds, so the short wait costs it nothing.
    const wait = retried ? CLUSTER_DEFAULTS.kickAfterElectionMs : CLUSTER_DEFAULTS.kickAfterMs;
    const kick = setTimeout(() => {
      if (this.waiters.has(env.id) && !this.applyingNow && Date.now() - this.lastProgress > wait) this.readAgain(retried ? 'a write waits after an election' : 'a write waits');
    }, wait);
    kick.unref();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        applied,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new FathomError('SERVICE_UNAVAILABLE', `the cluster accepted the write, but this node has not applied it within ${CLUSTER_DEFAULTS.applyTimeoutMs / 1000} s${this.stuck ? ` (${this.stuck})` : ''}; it will be applied`)),
            CLUSTER_DEFAULTS.applyTimeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
      clearTimeout(kick);
      this.waiters.delete(env.id);
    }
  }

  /** Ends the current reader; the apply loop starts another at the next sequence. */
  private readAgain(why: string): void {
    this.lastProgress = Date.now();
    this.log('info', 'reading the stream again', { why, applied: this.applied });
    void this.messages?.close().catch(() => undefined);
  }

  /** On a reconnect (this node's NATS server died or came back), the reader starts again at once. */
  private async watchConnection(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (this.stopped) return;
      if (s.type === 'reconnect') this.readAgain(`reconnected to ${this.serverName()}`);
    }
  }

  /** A document batch too large for one message goes as two halves, in order. */
  private async submitSplit(cmd: Command, bytes: number): Promise<unknown> {
    if (cmd.op !== 'docs.write' || cmd.ops.length < 2) {
      throw new FathomError('PAYLOAD_TOO_LARGE', `this write is ${bytes} bytes, more than the cluster's largest message (${this.maxPayload} bytes)`);
    }
    const half = cmd.ops.length >> 1;
    const a = this.submit({ ...cmd, ops: cmd.ops.slice(0, half) });
    const b = this.submit({ ...cmd, ops: cmd.ops.slice(half) });
    return [...((await a) as unknown[]), ...((await b) as unknown[])];
  }

  /**
   * Publishes, retrying on a refusal or a timeout (the same id: JetStream drops a duplicate).
   * Resolves with whether it took more than one attempt (the stream had no leader for a
   * while, an election, or this node's NATS server died).
   */
  private async publish(id: string, data: Uint8Array): Promise<boolean> {
    const started = Date.now();
    const deadline = started + CLUSTER_DEFAULTS.publishTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const ack = await this.js.publish(this.subject, data, { msgID: id, timeout: CLUSTER_DEFAULTS.publishAttemptMs });
        if (ack.seq > this.last) this.last = ack.seq;
        if (attempt > 0) this.log('info', 'the cluster took the write', { attempts: attempt + 1, waitedMs: Date.now() - started });
        return attempt > 0;
      } catch (e) {
        // (one line per write, not per attempt: attempts come every publishRetryMs during an election)
        if (attempt === 0) this.log('info', 'the cluster did not take a write; retrying', { err: (e as Error).message });
        if (Date.now() > deadline || this.stopped) {
          throw new FathomError('SERVICE_UNAVAILABLE', `the cluster could not take the write (no JetStream quorum?): ${(e as Error).message}`);
        }
        await sleep(CLUSTER_DEFAULTS.publishRetryMs);
      }
    }
  }

  // ---------------------------------------------------------------------------
  // Applying
  // ---------------------------------------------------------------------------

  /**
   * A consumer of the stream from `seq`. Just after an election a request can go unanswered
   * (the new leader takes a moment to answer API requests): rather than wait out the API
   * timeout, ask again every readerAskAgainMs, keeping the earlier requests open (a slow
   * server still answers one of them), and take the first answer.
   */
  private async consumerFrom(seq: number) {
    const lib = await nats();
    const open = new Set<ReturnType<JetStreamClient['consumers']['get']>>();
    let failure: unknown;
    for (;;) {
      const ask = this.js.consumers.get(this.stream, { deliver_policy: lib.jetstream.DeliverPolicy.StartSequence, opt_start_seq: seq });
      open.add(ask);
      // (registered before Promise.any's own handlers: a failed request has left `open` when it answers)
      ask.then(
        () => undefined,
        (e: unknown) => {
          open.delete(ask);
          failure = e;
        },
      );
      const answer = await Promise.race([Promise.any([...open]).catch(() => undefined), sleep(CLUSTER_DEFAULTS.readerAskAgainMs).then(() => undefined)]);
      if (answer) return answer;
      if (open.size === 0) throw failure; // every request failed: the caller pauses, then tries again
      if (this.stopped) throw new FathomError('SERVICE_UNAVAILABLE', 'this node is leaving the cluster');
    }
  }

  private async applyLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const consumer = await this.consumerFrom(this.applied + 1);
        const messages = await consumer.consume({ max_messages: 256, expires: CLUSTER_DEFAULTS.readerExpiresMs });
        this.messages = messages;
        this.lastProgress = Date.now();
        failures = 0;
        this.log('info', 'reading the stream', { from: this.applied + 1 });
        /** The stream's first command when it no longer holds our next one. */
        let purgedTo: number | undefined;
        for await (const m of messages) {
          if (this.stopped) break;
          if (m.seq <= this.applied) continue;
          if (m.seq > this.applied + 1) {
            // (out of the loop first: the reader's close() settles only once its iterator has ended)
            purgedTo = m.seq;
            break;
          }
          // (the stream's end as this reader sees it; the leader's answer in watch() corrects it)
          this.last = Math.max(m.seq + m.info.pending, this.applied);
          this.applyingNow = true;
          try {
            await this.applyOne(m.seq, decode(m.data));
          } finally {
            this.applyingNow = false;
          }
          this.lastProgress = Date.now();
        }
        await messages.close().catch(() => undefined);
        if (purgedTo !== undefined) {
          // purged past us (the leader snapshotted while we were behind): restore from the
          // snapshot, then read on from where it ends
          this.log('warn', 'the stream no longer holds the next command; restoring from the latest snapshot', { applied: this.applied, next: purgedTo });
          try {
            await this.restore(purgedTo, this.quiesce?.());
          } catch (e) {
            this.stuck = `the stream no longer holds command ${this.applied + 1}, and restoring from the snapshot failed: ${(e as Error).message}`;
            this.log('error', 'restoring from the snapshot failed', { err: (e as Error).message });
            await sleep(5000);
          }
        }
      } catch (e) {
        if (this.stopped) break;
        // (one line per outage: during an election a reader fails every readerRetryMs)
        if (failures++ === 0) this.log('warn', 'reading the stream failed; retrying', { err: (e as Error).message });
        await sleep(CLUSTER_DEFAULTS.readerRetryMs);
      }
    }
  }

  private async applyOne(seq: number, env: Envelope): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      while (this.paused) await this.paused;
      let done!: () => void;
      this.applyIdle = new Promise<void>((r) => (done = r));
      try {
        const result = await applying({ seq, nowMs: env.at }, () => applyCommand(this.engine, env.cmd));
        await this.settle(seq, env);
        this.waiters.get(env.id)?.resolve(result);
        this.stuck = undefined;
        return;
      } catch (e) {
        if (e instanceof FathomError && e.status < 500) {
          // deterministic: every node fails it the same way
          await this.settle(seq, env);
          this.waiters.get(env.id)?.reject(e);
          this.stuck = undefined;
          return;
        }
        this.stuck = `command ${seq} failed on this node: ${(e as Error).message}`;
        if (attempt === 0) this.log('error', 'applying a command failed on this node; retrying', { seq, op: env.cmd.op, err: (e as Error).message });
        await sleep(Math.min(5000, 250 * 2 ** Math.min(attempt, 5)));
      } finally {
        done();
      }
    }
  }

  /** Records `seq` as applied when the command's own transactions did not (it wrote nothing). */
  private async settle(seq: number, env: Envelope): Promise<void> {
    const store = this.engine.store;
    if (((store.meta.get(APPLIED_KEY) as number | undefined) ?? 0) < seq) {
      await applying({ seq, nowMs: env.at }, () => write(store, () => undefined));
    }
    this.applied = seq;
  }

  /**
   * Stops applying after the command in progress (compaction): resolves true once that
   * command is done, or false when it is not by `deadline` (ms since the epoch; paused either
   * way, until `resume`). A command waits for nothing a compaction holds before it pauses
   * the applier (compact.ts), so the wait ends unless the command itself is stuck.
   */
  async pause(deadline = Infinity): Promise<boolean> {
    if (!this.paused) this.paused = new Promise<void>((r) => (this.resumeApply = r));
    return settlesBy(this.applyIdle, deadline);
  }

  resume(): void {
    const r = this.resumeApply;
    this.paused = null;
    r();
  }

  // ---------------------------------------------------------------------------
  // Snapshots
  // ---------------------------------------------------------------------------

  /** Stores a snapshot of this node's directory and purges the stream before it (the leader does, periodically). */
  async snapshot(): Promise<{ seq: number; bytes: number } | undefined> {
    if (this.snapshotting) return undefined;
    this.snapshotting = true;
    const dir = fs.mkdtempSync(path.join(this.engine.dir, '.snapshot-'));
    try {
      await copyEnvironment(this.engine.store, dir);
      const copy = openStore(dir, { readOnly: true, create: false });
      const seq = (copy.meta.get(APPLIED_KEY) as number | undefined) ?? 0;
      await copy.close();
      const bytes = fs.readFileSync(path.join(dir, 'data.mdb'));
      await this.snapshots.putBlob({ name: SNAPSHOT_OBJECT, description: JSON.stringify({ seq, node: this.opts.nodeName }) }, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      this.lastSnapshotSeq = seq;
      const keepFrom = seq - this.opts.keepAfterSnapshot + 1;
      if (keepFrom > 1) await this.jsm.streams.purge(this.stream, { seq: keepFrom });
      this.log('info', 'stored a snapshot', { seq, bytes: bytes.byteLength, streamFrom: Math.max(1, keepFrom) });
      return { seq, bytes: bytes.byteLength };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      this.snapshotting = false;
    }
  }

  /**
   * Replaces this node's directory with the latest snapshot (the stream no longer holds what
   * it needs). At start nothing else uses the engine; while serving, `quiet` brings the
   * server to a standstill around the swap (the door closed, writers held), as compaction does.
   */
  private async restore(firstSeq: number, quiet?: RestoreQuiet): Promise<void> {
    const info = await this.snapshots.info(SNAPSHOT_OBJECT);
    const meta = info?.description ? (JSON.parse(info.description) as { seq: number }) : undefined;
    if (!meta || meta.seq + 1 < firstSeq) {
      throw new FathomError('DATA_DIR', `the stream starts at command ${firstSeq} and no snapshot covers what comes before; this node cannot catch up`);
    }
    const blob = await this.readSnapshot();
    const dir = fs.mkdtempSync(path.join(this.engine.dir, '.restore-'));
    fs.writeFileSync(path.join(dir, 'data.mdb'), blob, { mode: 0o600 });
    if (quiet) {
      // writes waiting for this node to apply them would hold the door open: they are in the
      // stream and will be applied; their clients hear so now
      for (const w of this.waiters.values()) w.reject(new FathomError('SERVICE_UNAVAILABLE', 'the cluster accepted the write; this node is restoring from a snapshot and will apply it then'));
      this.waiters.clear();
      const deadline = Date.now() + OPERATIONS_DEFAULTS.quietTimeoutMs;
      try {
        await quiet.holdWrites(deadline);
        await quiet.holdReads(deadline);
      } catch (e) {
        await quiet.release();
        fs.rmSync(dir, { recursive: true, force: true });
        throw e;
      }
      await quiet.closeEnv();
      try {
        swapDataFile(this.engine.dir, dir);
      } finally {
        await quiet.openEnv();
      }
    } else {
      await this.engine.suspend();
      await this.engine.store.closeEnv();
      swapDataFile(this.engine.dir, dir);
      this.engine.store.openEnv();
      this.engine.resume();
    }
    this.applied = (this.engine.store.meta.get(APPLIED_KEY) as number | undefined) ?? 0;
    this.last = Math.max(this.last, this.applied);
    this.log('info', 'restored from the latest snapshot', { seq: this.applied, bytes: blob.byteLength });
  }

  /**
   * The latest snapshot's bytes. A snapshot replaced while it is read (another node stored a
   * newer one) loses its chunks, and the object store's own read would wait for them for
   * ever: a read that receives nothing for snapshotReadIdleMs fails instead, to be retried.
   */
  private async readSnapshot(): Promise<Buffer> {
    const gone = () => new FathomError('SERVICE_UNAVAILABLE', 'the snapshot was replaced or disappeared while it was being read; reading it again');
    const r = await this.snapshots.get(SNAPSHOT_OBJECT);
    if (!r) throw gone();
    const reader = r.data.getReader();
    let idle = false;
    let timer: NodeJS.Timeout | undefined;
    const watch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        idle = true;
        void reader.cancel().catch(() => undefined);
      }, CLUSTER_DEFAULTS.snapshotReadIdleMs);
    };
    const chunks: Uint8Array[] = [];
    try {
      watch();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        watch();
      }
    } finally {
      clearTimeout(timer);
    }
    const bytes = Buffer.concat(chunks);
    if (idle || bytes.byteLength !== r.info.size) throw gone();
    // (the object store checks the digest as the last chunk arrives)
    const error = await r.error;
    if (error) throw error;
    return bytes;
  }

  // ---------------------------------------------------------------------------
  // Watching: leader, lag, periodic snapshots
  // ---------------------------------------------------------------------------

  private async watch(): Promise<void> {
    this.noteOwnServer();
    // The reader can stall when the NATS server holding its consumer dies: the client
    // notices only after missed heartbeats. Behind with nothing applied for a while: read
    // again from the next sequence.
    if (this.last > this.applied && !this.applyingNow && !this.paused && Date.now() - this.lastProgress > CLUSTER_DEFAULTS.stallMs) {
      this.readAgain(`behind the stream (${this.applied} of ${this.last}) with nothing applied for a while`);
    }
    try {
      const info = await this.jsm.streams.info(this.stream);
      this.leader = info.cluster?.leader ?? '';
      // the leader's word: a replica that was away may have reported entries it later dropped
      this.last = info.state.last_seq;
      if (this.isLeader() && this.applied - this.lastSnapshotSeq >= this.opts.snapshotEvery) {
        await this.snapshot();
      }
    } catch (e) {
      this.log('warn', 'could not read the stream state', { err: (e as Error).message });
    }
  }

  /** The NATS server this node is connected to. */
  private serverName(): string {
    return this.nc.info?.server_name ?? '';
  }

  /** Learns this node's own server's name while connected to it (its first URL). */
  private noteOwnServer(): void {
    if (this.ownServer) return;
    const own = this.opts.servers[0]?.replace(/^nats:\/\//, '');
    if (own && this.nc.getServer().replace(/^nats:\/\//, '') === own) this.ownServer = this.serverName();
  }

  /** Leader: this node's own NATS server leads the stream (wherever it is connected now). */
  isLeader(): boolean {
    return this.leader !== '' && this.leader === (this.ownServer || this.serverName());
  }

  /** Asks JetStream to move the stream's leadership elsewhere. */
  async stepDown(): Promise<boolean> {
    try {
      const r = await this.nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${this.stream}`, undefined, { timeout: 5000 });
      const body = JSON.parse(new TextDecoder().decode(r.data)) as { success?: boolean };
      setTimeout(() => void this.watch(), 500).unref();
      return body.success === true;
    } catch (e) {
      this.log('warn', 'stepping the stream leader down failed', { err: (e as Error).message });
      return false;
    }
  }

  lag(): number {
    return Math.max(0, this.last - this.applied);
  }

  healthy(): boolean {
    return !this.stuck && !this.nc.isClosed() && this.lag() <= this.opts.healthyLag;
  }

  status(): Record<string, unknown> {
    return {
      node: this.opts.nodeName,
      role: this.isLeader() ? 'leader' : 'follower',
      leader_server: this.leader,
      server: this.ownServer || this.serverName(),
      connected_to: this.serverName(),
      applied: this.applied,
      stream_last: this.last,
      lag: this.lag(),
      healthy_lag: this.opts.healthyLag,
      ...(this.stuck ? { stuck: this.stuck } : {}),
      last_snapshot: this.lastSnapshotSeq,
    };
  }

  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    replicateThrough(this.engine.store, undefined);
    for (const w of this.waiters.values()) w.reject(new FathomError('SERVICE_UNAVAILABLE', 'this node is leaving the cluster'));
    this.waiters.clear();
    this.resume();
    await this.nc.close().catch(() => undefined);
    await this.loop?.catch(() => undefined);
  }
}
