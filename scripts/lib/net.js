// @ts-check
'use strict';
// Small network probes: is anything answering on a port, which port is free.
const net = require('node:net');

/**
 * True when a TCP connection to host:port succeeds within timeoutMs.
 * @param {string} host
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function canConnect(host, port, timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    /** @param {boolean} ok */
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Sends a Redis PING; true on +PONG (or an auth error, which still proves a Redis is there).
 * @param {string} host
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function redisAnswers(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let buf = '';
    /** @param {boolean} ok */
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      buf += d.toString('utf8');
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
    socket.once('error', () => done(false));
  });
}

/**
 * A port the OS says is free right now on 127.0.0.1 (or the preferred one, if it is free).
 * @param {number} [preferred]
 * @returns {Promise<number>}
 */
function freePort(preferred) {
  /**
   * The port bound (the OS's pick for 0), or null when it cannot be bound.
   * @param {number} port
   * @returns {Promise<number | null>}
   */
  const tryListen = (port) =>
    new Promise((resolve) => {
      const server = net.createServer();
      server.unref();
      server.once('error', () => resolve(null));
      server.listen({ host: '127.0.0.1', port }, () => {
        // A listening TCP server's address is an AddressInfo (a string only for pipes and sockets).
        const { port: got } = /** @type {import('node:net').AddressInfo} */ (server.address());
        server.close(() => resolve(got));
      });
    });
  return (async () => {
    if (preferred) {
      const got = await tryListen(preferred);
      if (got) return got;
    }
    const any = await tryListen(0);
    // Callers hand the port straight to a server (redis-server --port, a role's PORT): fail here
    // rather than give them null.
    if (any === null) throw new Error('no free TCP port on 127.0.0.1 (cannot listen there at all)');
    return any;
  })();
}

/**
 * Polls check() until it is true; throws once timeoutMs has passed.
 * @param {() => boolean | Promise<boolean>} check
 * @param {{ timeoutMs: number, intervalMs?: number, what: string }} options
 * @returns {Promise<void>}
 */
async function waitFor(check, { timeoutMs, intervalMs = 200, what }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

module.exports = { canConnect, redisAnswers, freePort, waitFor };
