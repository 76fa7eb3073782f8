import type { IncomingMessage, ServerResponse } from 'node:http';

// The few Express request/response members the API uses (@types/express is not a dependency).
export interface HttpRequest extends IncomingMessage {
  path: string;
  baseUrl: string;
  route?: { path?: string };
}

export interface HttpResponse extends ServerResponse {
  status(code: number): this;
  json(body: unknown): this;
}

export type NextFunction = (err?: unknown) => void;
