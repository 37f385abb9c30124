import type { Deps } from '../../deps.js'
import { held, raw, route, type Ctx, type Result, type RouteDef } from '../../http/route.js'
import { answerMcp } from '../mcp.js'

/** Request headers the MCP transport reads. */
const PASSED = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id']

/**
 * The MCP endpoint AI buying agents use (AdCP media buy over Streamable HTTP): the seat's API key as Bearer, with the
 * mcp:tools scope. Stateless (no MCP session), JSON responses; not a hot path, so it answers when the tool has.
 */
export function mcpRoutes ({ config, store, outbox }: Deps): RouteDef[] {
  const respond = async (ctx: Ctx<Buffer>): Promise<Result> => {
    const headers = new Headers()
    for (const name of PASSED) if (ctx.headers[name] !== undefined) headers.set(name, ctx.headers[name]!)
    // MCP clients send both; a plain HTTP client that sends neither still gets the JSON answer every reply here is.
    if (!headers.has('accept')) headers.set('accept', 'application/json, text/event-stream')
    if (ctx.dryRun) ctx.warn('Dry run: tool calls ran their checks and answered; nothing they would record was kept.')
    const request = new Request(`${config.baseUrl}/mcp`, { method: 'POST', headers, body: new Uint8Array(ctx.body) })
    const response = await answerMcp({ store, outbox, seat: ctx.principal!.seat!, keyId: ctx.principal!.key.key_id, now: ctx.now, dryRun: ctx.dryRun }, request)
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
  const description = 'Model Context Protocol (Streamable HTTP, protocol 2025-06-18) for AI buying agents: the AdCP media-buy tasks as MCP tools (tools/list names them). Authenticate with the seat\'s API key as Bearer; the key needs the mcp:tools scope (403 missing_scope otherwise). Stateless: no Mcp-Session-Id is issued, and GET (server-sent events) and DELETE (end a session) answer 405 with Allow: POST. Every tool call is audited to the seat (audit.agent.tool_called); with ?dry_run=true the tools answer and record nothing. A tool\'s refusal is its answer, with isError and AdCP errors [{code, message, field}].'
  return [
    route<Buffer>({ ...common, method: 'post', summary: 'MCP: one JSON-RPC message (initialize, tools/list, tools/call)', description, rawBody: true, maxBodyBytes: 1_048_576, handler: (ctx) => held(respond(ctx)) })
  ]
}
