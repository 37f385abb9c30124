import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { startTestService, type TestService } from './helpers/service.js'

// AI buying agents over MCP (POST /mcp, AdCP media buy), as an agent reaches them: JSON-RPC over real HTTP, and the
// official AdCP conformance runner (@adcp/client's `adcp test`) driving the same endpoint.

const run = promisify(execFile)
const ACCEPT = 'application/json, text/event-stream'

async function rpc (svc: TestService, key: string | undefined, message: unknown) {
  return await svc.request('POST', '/mcp', { ...(key !== undefined ? { key } : {}), headers: { accept: ACCEPT }, raw: JSON.stringify(message) })
}

t.test('tools/list and get_adcp_capabilities for a seat key with mcp:tools, each call audited', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('agent_buyer')
  const list = await rpc(svc, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
  t.equal(list.status, 200)
  t.match(list.headers.get('content-type'), /application\/json/)
  t.same(list.body.result.tools.map((tool: { name: string }) => tool.name), ['get_adcp_capabilities'])
  t.equal(list.body.result.tools[0].inputSchema.type, 'object', 'input schemas come from schemas/')
  const caps = await rpc(svc, key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: { context: { trace: 't-1' } } } })
  t.equal(caps.status, 200)
  t.match(caps.body.result.structuredContent, { adcp: { major_versions: [3] }, supported_protocols: ['media_buy'], account: { sandbox: true }, media_buy: { supported_pricing_models: ['cpm'] }, context: { trace: 't-1' } })
  t.same(JSON.parse(caps.body.result.content[0].text), caps.body.result.structuredContent, 'the same answer as text')
  const audit = await svc.admin('GET', '/admin/v1/audit')
  t.match(audit.body.data.events.find((e: { type: string }) => e.type === 'audit.agent.tool_called'), { actor: 'agent', subject: 'seat:agent_buyer', data: { tool: 'get_adcp_capabilities', key_id: String } })
})

t.test('refused: no key, a key without mcp:tools, bad arguments, unknown tools, other methods', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('narrow_buyer')
  t.match(await rpc(svc, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' }), { status: 401, body: { error_code: 'authentication_required' } })
  // Sandbox keys pass every scope check: approve the seat, then mint a key without mcp:tools.
  await svc.admin('POST', '/admin/v1/seats/narrow_buyer/approve', { reason: 'test' })
  const narrow = (await svc.request('POST', '/openrtb/v2/keys', { key, body: { scopes: ['bid:write', 'inventory:read'] } })).body.data.key
  t.match(await rpc(svc, narrow, { jsonrpc: '2.0', id: 1, method: 'tools/list' }), { status: 403, body: { error_code: 'missing_scope', required_scope: 'mcp:tools' } })
  const before = svc.snapshot()
  const bad = await rpc(svc, key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: { budget: 5 } } })
  t.equal(bad.status, 200)
  t.equal(bad.body.result.isError, true, 'a refused task is the tool\'s answer, which an agent can read and correct')
  t.match(bad.body.result.structuredContent, { errors: [{ code: String, message: /budget/ }] })
  const unknown = await rpc(svc, key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'delete_everything', arguments: {} } })
  t.match(unknown.body, { error: { code: -32602, message: /No tool delete_everything/ } })
  const broken = await svc.request('POST', '/mcp', { key, headers: { accept: ACCEPT }, raw: '{"jsonrpc": "2.0", "id": ' })
  t.match(broken, { status: 400, body: { error: { code: -32700 } } }, 'malformed JSON is a JSON-RPC parse error')
  t.match(await svc.request('GET', '/mcp', { key }), { status: 405, body: { error_code: 'method_not_allowed' } })
  t.equal((await svc.request('GET', '/mcp', { key })).headers.get('allow'), 'POST', 'no server-sent events: the endpoint is stateless')
  const after = svc.snapshot()
  t.same({ ...after, outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'nothing written but the audit trail of the calls')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('the AdCP conformance runner passes health_check against the endpoint', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('conformance')
  const { stdout } = await run(process.execPath, ['node_modules/@adcp/client/bin/adcp.js', 'test', `${svc.url}/mcp`, 'health_check', '--protocol', 'mcp', '--auth', key, '--json'], { timeout: 60_000 })
  const report = JSON.parse(stdout.slice(stdout.indexOf('{')))
  t.equal(report.overall_passed, true, report.summary)
  t.match(report.steps[0].response_preview, /get_adcp_capabilities/)
})
