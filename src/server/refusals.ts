/**
 * src/server/refusals.ts: requests Node's HTTP layer refuses before any route sees them,
 * answered like every other error: `{"message": ...}` with the status the protocol names.
 *
 *   malformed request line or header    400   (Node's parser: clientError)
 *   request line over the header limit  414   \ (Node's parser: HPE_HEADER_OVERFLOW;
 *   headers over the header limit       431   /  told apart by where the first line ends)
 *   headers not sent in time            408
 *   HTTP/1.1 without a Host header      400   (checked in an onRequest hook: Node's own
 *                                              check answers with an empty body)
 *   Expect other than 100-continue      417   (checkExpectation)
 *
 * Nothing of the refused request (its raw bytes may hold a key header) is logged.
 */
import type { Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { FathomError } from '../errors.js';

/** What Node hands a clientError listener: the parser's code and the bytes it was reading. */
type ParserError = Error & { code?: string; rawPacket?: unknown };

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 414: 'URI Too Long', 431: 'Request Header Fields Too Large' };

function rawReply(socket: Socket, status: number, message: string): void {
  const body = JSON.stringify({ message });
  socket.write(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** What a parser error means for the client, as a status and a message. */
export function clientErrorAnswer(err: ParserError, headerLimit: number): { status: number; message: string } {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'the request headers did not arrive in time' };
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    const raw = err.rawPacket;
    const lineEnd = Buffer.isBuffer(raw) ? raw.indexOf('\r\n') : -1;
    if (lineEnd < 0 || lineEnd > headerLimit / 2) {
      return { status: 414, message: `the request line is longer than the server accepts (${headerLimit} bytes with the headers); send long searches with POST /multi_search` };
    }
    return { status: 431, message: `the request headers are larger than ${headerLimit} bytes` };
  }
  return { status: 400, message: `malformed HTTP request${err.code ? ` (${err.code})` : ''}` };
}

/** Fastify's `clientErrorHandler`: answers, never logs the request. */
export function clientErrorHandler(headerLimit: number) {
  return (err: ParserError, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const { status, message } = clientErrorAnswer(err, headerLimit);
      rawReply(socket, status, message);
    }
    socket.destroy();
  };
}

/** onRequest: HTTP/1.1 requires a Host header (Node's own check would answer with no body). */
export async function requireHost(req: FastifyRequest): Promise<void> {
  if (req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor >= 1 && !req.headers.host) {
    throw new FathomError('BAD_REQUEST', 'the Host header is required in HTTP/1.1 requests');
  }
}

/** The server's `checkExpectation` listener: any Expect other than 100-continue gets 417. */
export function refuseExpectation(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({ message: `unsupported Expect header \`${String(req.headers.expect).slice(0, 100)}\`: only \`100-continue\` is supported` });
  res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}
