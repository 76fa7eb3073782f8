import type { FastifyReply, FastifyRequest } from 'fastify';

// The API's routes run on Nest's Fastify adapter (see `httpAdapter` in @almanac/platform).
export type HttpRequest = FastifyRequest;
export type HttpResponse = FastifyReply;
