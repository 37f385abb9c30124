import { Reports } from '../../analytics/reports.js'
import type { Deps } from '../../deps.js'
import { catalogRecord } from '../../campaigns/catalog-lock.js'
import { held, raw, route, type Ctx, type Result, type RouteDef } from '../../http/route.js'

/** The tools that book screen time or rewrite media buys, campaigns and placements. */
const BOOKING_TOOLS: ReadonlySet<string> = new Set(['create_media_buy', 'update_media_buy'])

/** Whether the request calls a tool that books screen time or rewrites media buys, campaigns and placements. */
function callsBookingTool (ctx: Ctx<Buffer>): boolean {
  let message: { method?: unknown, params?: { name?: unknown } }
  try {
    message = JSON.parse(ctx.body.toString('utf8')) as typeof message
  } catch {
    return false
  }
  return message?.method === 'tools/call' && typeof message.params?.name === 'string' && BOOKING_TOOLS.has(message.params.name)
}

/**
 * AdCP test clients mark runs X-Dry-Run: true. A sandbox seat is the test account (AdCP's sandbox), so there the run
 * goes through end to end, its buys made as its REST placements are; on an approved seat it records nothing.
 */
function markedDry (ctx: Ctx<Buffer>): boolean {
  return ctx.headers['x-dry-run']?.toLowerCase() === 'true' && ctx.principal!.seat!.status !== 'sandbox'
}

/**
 * On a cluster node, a call of a booking tool holds the catalog's lock (src/campaigns/catalog-lock.ts), and what it
 * books is decided in the logs (RouteDef.books), or only checked when the call is a dry run.
 */
function bookingCall (ctx: Ctx<Buffer>): string | undefined {
  return callsBookingTool(ctx) ? catalogRecord() : undefined
}

function booksThrough (ctx: Ctx<Buffer>): boolean | 'dry' {
  return callsBookingTool(ctx) && (markedDry(ctx) ? 'dry' : true)
}

/** Request headers the MCP transport reads. */
const PASSED = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id']

/**
 * The MCP endpoint AI buying agents use (AdCP media buy over Streamable HTTP): the seat's API key as Bearer, with the
 * mcp:tools scope. Stateless (no MCP session), JSON responses; not a hot path, so it answers when the tool has.
 */
export function mcpRoutes ({ config, store, outbox, inventory, moderator, sealer, analytics, reports: results }: Deps): RouteDef[] {
  const reports = new Reports(analytics, config.clickhouseDatabase)
  const respond = async (ctx: Ctx<Buffer>): Promise<Result> => {
    // Taken on this turn: the tool runs on later ones.
    const booking = store.share.bookings?.current()
    const seat = ctx.principal!.seat!
    const dryRun = ctx.dryRun || markedDry(ctx)
    const headers = new Headers()
    for (const name of PASSED) if (ctx.headers[name] !== undefined) headers.set(name, ctx.headers[name]!)
    // MCP clients send both; a plain HTTP client that sends neither still gets the JSON answer every reply here is.
    if (!headers.has('accept')) headers.set('accept', 'application/json, text/event-stream')
    if (ctx.dryRun) ctx.warn('Dry run: tool calls ran their checks and answered; nothing they would record was kept.')
    const request = new Request(`${config.baseUrl}/mcp`, { method: 'POST', headers, body: new Uint8Array(ctx.body) })
    // Loaded on the first call: the MCP SDK (and zod under it) would otherwise add to every hot thread's start.
    const { answerMcp } = await import('../mcp.js')
    const response = await answerMcp({ store, outbox, inventory, moderator, sealer, reports, results, config, seat, keyId: ctx.principal!.key.key_id, now: ctx.now, dryRun, booking }, request)
    const out: Record<string, string> = {}
    for (const name of ['mcp-session-id', 'mcp-protocol-version', 'allow']) {
      const value = response.headers.get(name)
      if (value !== null) out[name] = value
    }
    return raw(Buffer.from(await response.arrayBuffer()), response.headers.get('content-type') ?? 'application/json', response.status, out)
  }
  const common = {
    path: '/mcp',
    tag: 'Agents',
    envelope: 'flat',
    auth: 'seat',
    scope: 'mcp:tools',
    rateGroup: 'agents',
    agent: true,
    produces: 'application/json'
  } as const
  return [
    route<Buffer>({ ...common, method: 'post', summary: 'MCP: one JSON-RPC message (initialize, tools/list, tools/call)', rawBody: true, maxBodyBytes: 1_048_576, exclusive: bookingCall, books: booksThrough, handler: (ctx) => held(respond(ctx)) })
  ]
}
