import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { ApiError } from '../errors.js'
import { schemas } from '../generated/schemas.js'
import { validate } from '../http/validate.js'
import { VERSION } from '../version.js'
import type { ToolCall } from './call.js'
import { TOOLS } from './tools.js'

const SERVER_INFO = { name: 'oohbid', title: 'oohbid DOOH sales agent (AdCP media buy)', version: VERSION }

/** A tool's answer as MCP carries it: AdCP's JSON as structured content, and the same JSON as text for clients without it. */
function answer (data: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data, ...(isError ? { isError: true } : {}) }
}

/** An MCP server for one request (stateless Streamable HTTP): the AdCP tools, run as the calling seat. */
function serverFor (call: ToolCall): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: schemas[t.input] as unknown as { type: 'object' } }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = TOOLS.find((t) => t.name === request.params.name)
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `No tool ${request.params.name}; tools/list names them.`)
    const args = request.params.arguments ?? {}
    if (!call.dryRun) call.store.write(() => call.outbox.append('audit.agent.tool_called', `seat:${call.seat.seat_id}`, { actor: 'agent', key_id: call.keyId, tool: tool.name }, call.seat.seat_id))
    // AdCP's context is the caller's own: every answer, a refusal too, carries it back unchanged.
    const withContext = (data: Record<string, unknown>) => args.context !== undefined ? { ...data, context: args.context } : data
    try {
      validate(tool.input, args)
      return answer(withContext(await tool.run(call, args)))
    } catch (err) {
      // AdCP's error shape: the failure is the task's answer, so an agent can read and correct it.
      if (err instanceof ApiError) return answer(withContext({ errors: [{ code: err.code, message: err.message, ...(err.extras.param !== undefined ? { field: err.extras.param } : {}) }] }), true)
      throw err
    }
  })
  return server
}

/** Answers one MCP request (JSON-RPC over Streamable HTTP, JSON responses, no session) for the calling seat. */
export async function answerMcp (call: ToolCall, request: Request): Promise<Response> {
  const server = serverFor(call)
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  try {
    return await transport.handleRequest(request)
  } finally {
    await server.close()
  }
}
