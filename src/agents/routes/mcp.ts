import { Reports } from '../../analytics/reports.js'
import type { Deps } from '../../deps.js'
import { catalogRecord } from '../../campaigns/catalog-lock.js'
import { held, raw, route, type Ctx, type Result, type RouteDef } from '../../http/route.js'

/** The tools that book screen time or rewrite media buys, campaigns and placements. */
const BOOKING_TOOLS: ReadonlySet<string> = new Set(['create_media_buy', 'update_media_buy'])

/** On a cluster node, a call of a booking tool holds the catalog's lock (src/campaigns/catalog-lock.ts). */
function bookingCall (ctx: Ctx<Buffer>): string | undefined {
  let message: { method?: unknown, params?: { name?: unknown } }
  try {
    message = JSON.parse(ctx.body.toString('utf8')) as typeof message
  } catch {
    return undefined
  }
  return message?.method === 'tools/call' && typeof message.params?.name === 'string' && BOOKING_TOOLS.has(message.params.name) ? catalogRecord() : undefined
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
    const seat = ctx.principal!.seat!
    // AdCP test clients mark runs X-Dry-Run: true. A sandbox seat is the test account (AdCP's sandbox), so there the
    // run goes through end to end, its buys made as its REST placements are; on an approved seat it records nothing.
    const dryRun = ctx.dryRun || (ctx.headers['x-dry-run']?.toLowerCase() === 'true' && seat.status !== 'sandbox')
    const headers = new Headers()
    for (const name of PASSED) if (ctx.headers[name] !== undefined) headers.set(name, ctx.headers[name]!)
    // MCP clients send both; a plain HTTP client that sends neither still gets the JSON answer every reply here is.
    if (!headers.has('accept')) headers.set('accept', 'application/json, text/event-stream')
    if (ctx.dryRun) ctx.warn('Dry run: tool calls ran their checks and answered; nothing they would record was kept.')
    const request = new Request(`${config.baseUrl}/mcp`, { method: 'POST', headers, body: new Uint8Array(ctx.body) })
    // Loaded on the first call: the MCP SDK (and zod under it) would otherwise add to every hot thread's start.
    const { answerMcp } = await import('../mcp.js')
    const response = await answerMcp({ store, outbox, inventory, moderator, sealer, reports, results, config, seat, keyId: ctx.principal!.key.key_id, now: ctx.now, dryRun }, request)
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
  const description = 'Model Context Protocol (Streamable HTTP, protocol 2025-06-18) for AI buying agents: the AdCP 3 tasks as MCP tools (tools/list names them with their input schemas). Media buy: get_adcp_capabilities, get_products (a natural-language brief read by the discovery reader; products are venue-type and place segments, each sold guaranteed (spots booked at a fixed CPM), preferred (a fixed CPM ahead of the open auction) and at auction (a bid from the floor, second price), with forecasts and market CPMs), list_creative_formats, list_authorized_properties (the sellers of /sellers.json), create_media_buy and update_media_buy (guaranteed packages book their spots; non-guaranteed ones may take dayparts and an activated FEIN signal; any may take a property list; each becomes a campaign of the seat and a placement in the screens\' waterfall once a creative is approved, rotating among its approved creatives by weight), sync_creatives (through moderation; a creative_id synced with a new asset is a new version, moderated again), list_creatives, get_media_buys, get_media_buy_delivery, provide_performance_feedback, and sync_audiences (refused: screens identify no one). Signals: get_signals and activate_signal (FEIN\'s live audience). Governance: create_property_list, get_property_list, update_property_list, list_property_lists, delete_property_list (screen lists), list_content_standards, get_content_standards, calibrate_content and validate_content_delivery (the moderation policy, judged by moderation\'s classifiers). Authenticate with the seat\'s API key as Bearer; the key needs the mcp:tools scope (403 missing_scope otherwise). Stateless: no Mcp-Session-Id is issued, and GET (server-sent events) and DELETE (end a session) answer 405 with Allow: POST. Every tool call is audited to the seat (audit.agent.tool_called). With ?dry_run=true the tools answer and record nothing; so does X-Dry-Run: true (AdCP\'s test clients) on an approved seat, while a sandbox seat\'s buys are made. A tool\'s refusal is its answer, with isError and AdCP errors [{code, message, field}]. Not a hot path: a call may wait on ClickHouse up to REPORT_WAIT_MS, and a calibration on the moderation worker; HTTP pipelining is not supported here.'
  return [
    route<Buffer>({ ...common, method: 'post', summary: 'MCP: one JSON-RPC message (initialize, tools/list, tools/call)', description, rawBody: true, maxBodyBytes: 1_048_576, exclusive: bookingCall, handler: (ctx) => held(respond(ctx)) })
  ]
}
