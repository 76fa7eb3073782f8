import { Body, Controller, Get, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ASSET_URLS, CONSOLE_ASSETS } from './console-assets';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { redirect, sameOrigin, sendHtml } from './console-http';
import type { Form } from './console-pages';
import { ConsoleSession, SENT_BACK } from './console-session';
import { CONSOLE_PATH } from './console-viewer';
import { html } from './views/html';
import { page } from './views/layout';
import { signInView } from './views/sign-in.view';

/** The console's doors: its static assets, and signing in and out (a tenant API key or the admin token). */
@ApiExcludeController()
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class ConsoleSignInController {
  constructor(private readonly session: ConsoleSession) {}

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() reply: FastifyReply): void {
    const asset = CONSOLE_ASSETS.get(file);
    if (!asset) return void reply.status(404).send({ statusCode: 404, error: 'Not Found', message: 'no such asset' });
    void reply.headers({ 'content-type': asset.contentType, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' }).send(asset.body);
  }

  /** `why`: the fixed word of a viewer the console sent back here (its session ended, its tenant suspended). */
  @Get('sign-in')
  signInPage(@Res() reply: FastifyReply, @Query('why') why: unknown): void {
    const notice = typeof why === 'string' ? SENT_BACK.get(why) : undefined;
    sendHtml(reply, 200, page({ title: 'Sign in', viewer: null, assets: ASSET_URLS, notice }, signInView()));
  }

  @Post('sign-in')
  async signIn(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() form: Form): Promise<void> {
    const refuse = (status: number, error: string) => sendHtml(reply, status, page({ title: 'Sign in', viewer: null, assets: ASSET_URLS, error }, signInView()));
    if (!sameOrigin(req)) return refuse(403, 'This form was posted from another site.');
    const secret = typeof form?.token === 'string' ? form.token.trim() : '';
    const viewer = await this.session.resolve(secret, req);
    if (viewer === 'unknown') return refuse(401, 'That is neither a tenant API key nor the admin token.');
    if (viewer === 'suspended' || viewer === 'locked') return refuse(viewer === 'locked' ? 429 : 403, SENT_BACK.get(viewer)!);
    this.session.start(reply, secret);
    redirect(reply, viewer.role === 'admin' ? `${CONSOLE_PATH}/tenants` : CONSOLE_PATH);
  }

  @Post('sign-out')
  signOut(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    if (!sameOrigin(req)) return sendHtml(reply, 403, page({ title: 'Refused', viewer: null, assets: ASSET_URLS, error: 'This form was posted from another site.' }, html``));
    this.session.end(reply);
    redirect(reply, `${CONSOLE_PATH}/sign-in`);
  }
}
