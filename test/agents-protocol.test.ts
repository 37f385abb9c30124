import t from 'tap'
import { ACCEPT, rpc, tool, conformance, market, run } from './helpers/agents.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): MCP as an agent meets it: tools/list and capabilities, refusals,
// sync_audiences, the official AdCP conformance runner's scenarios, and the README's example agent. One service and one
// market for the file: each test has seats of its own.

const svc = await startTestService(t)
await market(svc)

const SCENARIOS = ['health_check', 'capability_discovery', 'discovery', 'creative_flow', 'behavior_analysis', 'signals_flow', 'create_media_buy', 'full_sales_flow', 'creative_sync', 'error_handling', 'validation', 'temporal_validation', 'pricing_edge_cases', 'response_consistency', 'creative_inline', 'governance_property_lists', 'governance_content_standards']

t.test('tools/list and get_adcp_capabilities for a seat key with mcp:tools, each call audited', async (t) => {
  const { key } = await svc.onboard('agent_buyer')
  const list = await rpc(svc, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
  t.equal(list.status, 200)
  t.match(list.headers.get('content-type'), /application\/json/)
  t.same(list.body.result.tools.map((tool: { name: string }) => tool.name), ['get_adcp_capabilities', 'get_products', 'list_creative_formats', 'list_authorized_properties', 'create_media_buy', 'update_media_buy', 'sync_creatives', 'list_creatives', 'get_media_buys', 'get_media_buy_delivery', 'provide_performance_feedback', 'get_signals', 'activate_signal', 'create_property_list', 'get_property_list', 'update_property_list', 'list_property_lists', 'delete_property_list', 'list_content_standards', 'get_content_standards', 'calibrate_content', 'validate_content_delivery', 'sync_audiences'])
  t.ok(list.body.result.tools.every((tool: { inputSchema: { type: string } }) => tool.inputSchema.type === 'object'), 'input schemas come from schemas/')
  t.match(list.body.result.tools.find((tool: { name: string }) => tool.name === 'create_media_buy').inputSchema, { required: ['buyer_ref', 'packages', 'start_time', 'end_time'] })
  const caps = await rpc(svc, key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: { context: { trace: 't-1' } } } })
  t.equal(caps.status, 200)
  t.match(caps.body.result.structuredContent, { adcp: { major_versions: [3] }, supported_protocols: ['media_buy', 'signals', 'creative', 'governance'], account: { sandbox: true }, media_buy: { supported_pricing_models: ['cpm'], features: { inline_creative_management: true, property_list_filtering: true, content_standards: true } }, governance: { property_features: [{ feature_id: 'fein', type: 'binary' }, { feature_id: 'video' }, { feature_id: 'audio' }, { feature_id: 'touch' }, { feature_id: 'floor_cpm', type: 'quantitative' }] }, context: { trace: 't-1' } })
  t.same(JSON.parse(caps.body.result.content[0].text), caps.body.result.structuredContent, 'the same answer as text')
  const audit = await svc.admin('GET', '/admin/v1/audit')
  t.match(audit.body.data.events.find((e: { type: string }) => e.type === 'audit.agent.tool_called'), { actor: 'agent', subject: 'seat:agent_buyer', data: { tool: 'get_adcp_capabilities', key_id: String } })
})

t.test('refused: no key, a key without mcp:tools, bad arguments, unknown tools, other methods', async (t) => {
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

t.test('sync_audiences is refused, saying why and what to target instead; nothing is kept', async (t) => {
  const { key } = await svc.onboard('crm_buyer')
  const before = svc.snapshot()
  const r = await tool(svc, key, 'sync_audiences', { audiences: [{ audience_id: 'loyal', add: [{ hashed_email: 'a'.repeat(64) }] }], context: { trace: 'a-1' } })
  t.equal(r.error, true)
  t.match(r.data, { errors: [{ code: 'unsupported_feature', field: 'audiences', message: /never identified.*venue types/s }], context: { trace: 'a-1' } })
  t.match(await tool(svc, key, 'sync_audiences', { account: { account_id: 'someone_else' } }), { error: true, data: { errors: [{ code: 'not_authorized' }] } }, 'another account is refused first, as everywhere')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'nothing kept')
  const caps = await tool(svc, key, 'get_adcp_capabilities', {})
  t.equal(caps.data.media_buy.features.audience_targeting, false, 'and the capabilities say so')
})

t.test('the AdCP conformance runner passes its media-buy, creative, signals, governance and capability scenarios', async (t) => {
  // Two seats: a stateless MCP client makes about three requests a tool call, and the scenarios together make more
  // than one sandbox seat's 300 agent requests a minute.
  const keys = [(await svc.onboard('conformance')).key, (await svc.onboard('conformance_2')).key]
  for (const [i, scenario] of SCENARIOS.entries()) {
    const report = await conformance(svc, keys[i % 2]!, scenario)
    t.equal(report.overall_passed, true, `${scenario}: ${report.summary}${report.steps.filter((s) => !s.passed).map((s) => `\n  ${s.step}: ${s.error}`).join('')}`)
  }
  t.ok(svc.snapshot().mediaBuys! >= 2, 'a sandbox seat\'s runs are real (X-Dry-Run changes nothing there): the buys exist')
})

t.test('the README\'s example agent (scripts/agent-buy.ts, on @adcp/client) buys a screen package', async (t) => {
  const { key } = await svc.onboard('example_agent')
  const { stdout } = await run(process.execPath, ['dist/scripts/agent-buy.js', '--url', `${svc.url}/mcp`, '--key', key, '--brief', 'gyms in Austin', '--budget', '2000', '--creative-url', 'https://assets.invalid/spot.png'], { timeout: 60_000 })
  const steps: Record<string, any> = Object.fromEntries(stdout.trim().split('\n').map((line) => JSON.parse(line)).map((s: { step: string }) => [s.step, s]))
  t.match(steps.get_products, { chosen: 'dooh:gym:US:TX:austin:guaranteed', cpm: 16.8 })
  t.match(steps.create_media_buy, { media_buy_id: /^mb_/, status: 'pending_activation', booked_impressions: 119047 })
  t.match(steps.sync_creatives, { action: 'created', status: 'pending_review', assigned_to: [`${steps.create_media_buy.media_buy_id}/pkg-0`] })
  t.match(steps.get_media_buy_delivery, { status: 'pending_activation', totals: { impressions: 0, spend: 0 } })
  const [creative] = (await svc.request('GET', '/openrtb/v2/creatives', { key })).body.data.creatives
  t.match(creative, { crid: steps.sync_creatives.creative_id, status: /pending_moderation|rejected/ }, 'the seat\'s creative, under the agent\'s own id, in moderation')
})
