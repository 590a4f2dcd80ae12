#!/usr/bin/env node
'use strict';
// Workers behind a real network hop with a known delay, for the remote-call test and
// benches/remote_calls.js: each worker gets a network namespace of its own, joined to this one
// by a veth pair, and every byte to or from it crosses a relay in this namespace that holds it
// `delayMs` in each direction (so a round trip takes 2 * delayMs more).
//
// The delay is a relay, not `tc netem`: netem is a kernel module that kernels without it (the
// development machine's: "Specified qdisc kind is unknown") cannot load, and a relay process
// delays alike everywhere. It delays each chunk by `delayMs` from its arrival, in order, with
// no bandwidth limit. It is a separate process, so a client blocked in a call does not stall it.
//
//   node scripts/netns.js relay <listenHost> <port> <targetHost> <delayMs>   (used below)
//
// Needs root (or CAP_NET_ADMIN) for `ip netns add`; `delayedWorkers` says why where that is
// refused, and callers skip.

const net = require('net');
const {execFileSync, spawn} = require('child_process');

/** `delayedWorkers` calls so far in this process. */
let calls = 0;

/** Below this many ms left, a relay waits by turns of the event loop, not a timer (1 ms steps). */
const TIMER_FLOOR_MS = 2;

/** Runs `ip ...args`; throws with its stderr. */
function ip(...args) {
  execFileSync('ip', args, {stdio: ['ignore', 'ignore', 'pipe']});
}

/**
 * Namespaces for `workers` workers, reached from here through relays adding `delayMs` each
 * way, worker i's server on `ports[i]`. Returns `{skip}` (why) where namespaces cannot be
 * made, else `{addresses, clientHost, command(i, argv), close()}`: `addresses[i]` is worker i's
 * `host:port` as every task must name it (its relay's), `clientHost` an address of this
 * namespace that the workers reach, `command(i, argv)` the `[command, args]` that runs `argv`
 * in worker i's namespace, and `close()` removes it all (also done at exit).
 */
async function delayedWorkers({workers, delayMs, ports}) {
  // A /24 per worker, in a 10.x range that differs per process, and names that differ per
  // call: a worker killed just before may still hold the last call's namespace for a moment.
  const call = calls++;
  const net = (i) => `10.${100 + (process.pid % 150)}.${(call % 16) * 16 + i + 1}`;
  const prefix = `tjr${process.pid % 10000}c${call % 16}`;
  const made = [];
  const relays = [];
  const close = () => {
    for (const relay of relays) relay.kill('SIGKILL');
    relays.length = 0;
    for (const ns of made.splice(0)) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', close);
  try {
    for (let i = 0; i < workers; i++) {
      const ns = `${prefix}n${i}`;
      const outside = `${prefix}a${i}`;
      const inside = `${prefix}b${i}`;
      ip('netns', 'add', ns);
      made.push(ns);
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', ns);
      ip('addr', 'add', `${net(i)}.1/24`, 'dev', outside);
      ip('link', 'set', outside, 'up');
      ip('-n', ns, 'addr', 'add', `${net(i)}.2/24`, 'dev', inside);
      ip('-n', ns, 'link', 'set', inside, 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      // Other workers' relays listen on this namespace's peers' addresses: all via here.
      ip('-n', ns, 'route', 'add', 'default', 'via', `${net(i)}.1`);
    }
  } catch (e) {
    close();
    return {skip: `network namespaces are not allowed here: ${String(e.stderr || e.message).trim()}`};
  }
  const addresses = [];
  for (let i = 0; i < workers; i++) {
    const host = `${net(i)}.1`;
    const relay = spawn(process.execPath, [__filename, 'relay', host, String(ports[i]),
      `${net(i)}.2`, String(delayMs)], {stdio: ['ignore', 'pipe', 'inherit']});
    relays.push(relay);
    await new Promise((resolve, reject) => {
      relay.stdout.once('data', resolve);
      relay.once('exit', (code) => reject(new Error(`relay ${i} exited (${code})`)));
    });
    addresses.push(`${host}:${ports[i]}`);
  }
  return {
    addresses,
    clientHost: `${net(0)}.1`,
    command: (i, argv) => ['ip', ['netns', 'exec', `${prefix}n${i}`, ...argv]],
    close,
  };
}

/**
 * Forwards `from`'s data to `to`, each chunk `delayMs` after it arrived, in arrival order.
 */
function delayInto(from, to, delayMs) {
  const queue = [];
  let waiting = false;
  const flush = () => {
    const now = performance.now();
    while (queue.length > 0 && queue[0].due <= now) to.write(queue.shift().chunk);
    if (queue.length === 0) {
      waiting = false;
      return;
    }
    const left = queue[0].due - now;
    if (left >= TIMER_FLOOR_MS) setTimeout(flush, left - TIMER_FLOOR_MS / 2);
    else setImmediate(flush);
  };
  from.on('data', (chunk) => {
    queue.push({chunk, due: performance.now() + delayMs});
    if (!waiting) {
      waiting = true;
      flush();
    }
  });
  from.on('end', () => {
    const ended = () => (queue.length === 0 ? to.end() : setImmediate(ended));
    ended();
  });
}

/** How long a relay keeps trying a target that refuses (a server still starting). */
const TARGET_RETRY_MS = 20000;

/**
 * The relay process: listens on listenHost:port, connects each client to targetHost:port. A
 * target still starting is retried, as a client would retry it directly: a relay's connection
 * accepted and then closed would be an error of the stream, not a refusal.
 */
function relay(listenHost, port, targetHost, delayMs) {
  const server = net.createServer((client) => {
    client.setNoDelay(true);
    client.pause();
    const giveUp = Date.now() + TARGET_RETRY_MS;
    const connect = () => {
      const target = net.connect(Number(port), targetHost);
      target.once('error', () => {
        target.destroy();
        if (Date.now() < giveUp && !client.destroyed) setTimeout(connect, 50);
        else client.destroy();
      });
      target.once('connect', () => {
        target.removeAllListeners('error');
        target.setNoDelay(true);
        delayInto(client, target, delayMs);
        delayInto(target, client, delayMs);
        client.resume();
        const both = () => {
          client.destroy();
          target.destroy();
        };
        client.on('error', both);
        target.on('error', both);
        client.on('close', both);
        target.on('close', both);
      });
    };
    client.on('error', () => client.destroy());
    connect();
  });
  server.listen(Number(port), listenHost, () => process.stdout.write('listening\n'));
}

if (require.main === module) {
  const [mode, ...args] = process.argv.slice(2);
  if (mode !== 'relay' || args.length !== 4) {
    process.stderr.write('usage: node scripts/netns.js relay <listenHost> <port> <targetHost> <delayMs>\n');
    process.exit(2);
  }
  relay(args[0], args[1], args[2], Number(args[3]));
}

module.exports = {delayedWorkers};
