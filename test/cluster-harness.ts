/**
 * Test harness for clusters: real `nats-server` processes forming a JetStream cluster on
 * 127.0.0.1 (ports chosen free), and real `fathom serve --cluster` nodes as child processes.
 * Everything started here is stopped by `stop()`.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

// (no vitest here: bench/cluster uses this harness too)
function binPath(): string {
  let d = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(d, 'bin', 'fathom.js'))) {
    const up = path.dirname(d);
    if (up === d) throw new Error('cannot find bin/fathom.js');
    d = up;
  }
  return path.join(d, 'bin', 'fathom.js');
}
const BIN = binPath();
const made: string[] = [];

/** A temporary directory, removed by `removeTemporaryDirectories`. */
export function tmpDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(d);
  return d;
}

export function removeTemporaryDirectories(): void {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** Path of nats-server, or undefined when it is not installed (tests then skip, saying so). */
export function natsServerPath(): string | undefined {
  for (const p of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) if (fs.existsSync(p)) return p;
  const r = spawnSync('which', ['nats-server'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export interface NatsServer {
  name: string;
  url: string;
  /** Where it keeps its JetStream data. */
  dir: string;
  process?: ChildProcess;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
}

export interface NatsCluster {
  servers: NatsServer[];
  urls: string[];
  stop(): Promise<void>;
}

async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
}

/** Starts `n` nats-server processes clustered with JetStream. */
export async function startNats(n = 3): Promise<NatsCluster> {
  const bin = natsServerPath();
  if (!bin) throw new Error('nats-server is not installed');
  const root = tmpDir('fathom-nats-');
  const clientPorts = await Promise.all(Array.from({ length: n }, freePort));
  const routePorts = await Promise.all(Array.from({ length: n }, freePort));
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(', ');
  const servers: NatsServer[] = clientPorts.map((port, i) => {
    const name = `nats${i + 1}`;
    const dir = path.join(root, name);
    fs.mkdirSync(dir, { recursive: true });
    const conf = path.join(dir, 'nats.conf');
    fs.writeFileSync(
      conf,
      `server_name: ${name}\nlisten: 127.0.0.1:${port}\nmax_payload: 8MB\njetstream { store_dir: "${dir}/js", max_memory_store: 64MB, max_file_store: 4GB }\ncluster { name: fathom-test, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes}] }\n`,
    );
    const s: NatsServer = {
      name,
      url: `nats://127.0.0.1:${port}`,
      dir,
      async start() {
        const child = spawn(bin, ['-c', conf], { stdio: ['ignore', 'ignore', 'ignore'] });
        s.process = child;
        await waitForPort(port);
      },
      async kill(signal = 'SIGKILL') {
        const p = s.process;
        if (!p) return;
        p.kill(signal);
        await exited(p);
        s.process = undefined;
      },
    };
    return s;
  });
  await Promise.all(servers.map((s) => s.start()));
  return {
    servers,
    urls: servers.map((s) => s.url),
    async stop() {
      await Promise.all(servers.map((s) => s.kill('SIGTERM')));
    },
  };
}

export interface FathomNode {
  name: string;
  dataDir: string;
  port: number;
  url: string;
  process?: ChildProcess;
  /** Everything the node printed (stdout and stderr). */
  output: string;
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** A `fathom serve --cluster` node (not started). `natsUrls`: its own server first. */
export async function fathomNode(name: string, natsUrls: string[], apiKey: string, extra: string[] = [], dataDir = path.join(tmpDir('fathom-node-'), 'data')): Promise<FathomNode> {
  const port = await freePort();
  const node: FathomNode = {
    name,
    dataDir,
    port,
    url: `http://127.0.0.1:${port}`,
    output: '',
    async start() {
      const child = spawn(
        process.execPath,
        [BIN, 'serve', '-d', dataDir, '--api-key', apiKey, '--api-address', '127.0.0.1', '--api-port', String(port), '--cluster', natsUrls.join(','), '--node-name', name, '--log-level', 'info', ...extra],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      node.process = child;
      child.stdout!.on('data', (d) => (node.output += d));
      child.stderr!.on('data', (d) => (node.output += d));
      const deadline = Date.now() + 60_000;
      while (!node.output.includes('"listening"')) {
        if (child.exitCode !== null) throw new Error(`node ${name} exited (${child.exitCode}): ${node.output.slice(-2000)}`);
        if (Date.now() > deadline) throw new Error(`node ${name} did not start: ${node.output.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async kill(signal = 'SIGKILL') {
      const p = node.process;
      if (!p) return;
      p.kill(signal);
      await exited(p);
      node.process = undefined;
    },
  };
  return node;
}
