import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../src/config.js'
import { resolveAdminToken } from '../src/admin/token.js'
import { startProcess } from './helpers/process.js'
import { startTestService } from './helpers/service.js'

t.test('defaults and parsing', async (t) => {
  const c = loadConfig({})
  t.match(c, { port: 8080, host: '0.0.0.0', demoFleet: 200, trustProxy: [], maxBodyBytes: 1048576, logLevel: 'info', baseUrl: undefined, clickhouseUrl: undefined, adminToken: undefined })
  t.match(c.dataDir, /\/data$/)
  const d = loadConfig({ PORT: '9000', BASE_URL: 'https://ads.example.com/', TRUST_PROXY: '10.0.0.1, 10.0.0.2', DEMO_FLEET: '0', CLICKHOUSE_URL: 'http://ch:8123' })
  t.match(d, { port: 9000, baseUrl: 'https://ads.example.com', trustProxy: ['10.0.0.1', '10.0.0.2'], demoFleet: 0, clickhouseUrl: 'http://ch:8123', operator: { domain: 'ads.example.com', email: 'adops@ads.example.com', sellerId: 'owned' } })
  t.throws(() => loadConfig({ PORT: 'eighty' }), /PORT must be an integer/)
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT/)
  t.throws(() => loadConfig({ LOG_LEVEL: 'loud' }), /LOG_LEVEL/)
  t.throws(() => loadConfig({ BASE_URL: 'ftp://x' }), /BASE_URL/)
})

t.test('the test escape hatches are off by default and refused in production, where the service will not start', async (t) => {
  t.match(loadConfig({}), { allowPrivateCallbackUrls: false, allowPrivateAssetUrls: false })
  t.match(loadConfig({ ALLOW_PRIVATE_CALLBACK_URLS: '1' }), { allowPrivateCallbackUrls: true })
  t.throws(() => loadConfig({ ALLOW_PRIVATE_CALLBACK_URLS: '1', NODE_ENV: 'production' }), /ALLOW_PRIVATE_CALLBACK_URLS is a test setting and is refused with NODE_ENV=production/)
  t.throws(() => loadConfig({ ALLOW_PRIVATE_ASSET_URLS: 'true', NODE_ENV: 'production' }), /refused with NODE_ENV=production/)
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-prod-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  await t.rejects(startProcess(dir, { NODE_ENV: 'production', ALLOW_PRIVATE_CALLBACK_URLS: '1' }), /exited with 1/, 'the process exits instead of serving')
})

t.test('cluster mode needs a node id and the secrets every node shares; without CLUSTER_NATS_URLS a node is one embedded service', async (t) => {
  t.equal(loadConfig({}).cluster, undefined, 'no cluster configuration: npm start as always')
  const shared = { ADMIN_TOKEN: 'same-everywhere', KEY_ENCRYPTION_KEY: '00'.repeat(32) }
  t.same(loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://10.0.0.1:4222, nats://10.0.0.2:4222', CLUSTER_NODE_ID: 'edge-1' }).cluster, { natsUrls: ['nats://10.0.0.1:4222', 'nats://10.0.0.2:4222'], nodeId: 'edge-1', replicas: 3, ackTimeoutMs: 5000, lingerMs: 5, partitions: 16, funnelKeepHours: 24, checkpointEntries: 10_000, bookKeepMs: 900_000 })
  t.match(loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_REPLICAS: '5', CLUSTER_ACK_TIMEOUT_MS: '250', CLUSTER_LINGER_MS: '0', CLUSTER_FUNNEL_KEEP_HOURS: '168', CLUSTER_PARTITIONS: '64', CLUSTER_CHECKPOINT_ENTRIES: '500', BID_TTL_SECONDS: '60' }).cluster, { replicas: 5, ackTimeoutMs: 250, lingerMs: 0, partitions: 64, funnelKeepHours: 168, checkpointEntries: 500, bookKeepMs: 660_000 })
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222' }), /needs CLUSTER_NODE_ID/)
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_PARTITIONS: '0' }), /CLUSTER_PARTITIONS/)
  t.match(loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_NODE_URL: 'http://10.0.0.7:8080' }).cluster, { nodeUrl: 'http://10.0.0.7:8080' }, 'where the other nodes forward this node its players')
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_NODE_URL: 'https://10.0.0.7/x' }), /CLUSTER_NODE_URL must be http:\/\/host:port/)
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'has space' }), /CLUSTER_NODE_ID/)
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'http://n:4222', CLUSTER_NODE_ID: 'a' }), /CLUSTER_NATS_URLS must list nats:\/\/host:port servers/)
  t.throws(() => loadConfig({ KEY_ENCRYPTION_KEY: shared.KEY_ENCRYPTION_KEY, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a' }), /needs ADMIN_TOKEN, the same on every node/)
  t.throws(() => loadConfig({ ADMIN_TOKEN: 'x', CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a' }), /needs KEY_ENCRYPTION_KEY/)
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_REPLICAS: '7' }), /CLUSTER_REPLICAS must be an integer from 1 to 5/)
  t.throws(() => loadConfig({ ...shared, CLUSTER_NATS_URLS: 'nats://n:4222', CLUSTER_NODE_ID: 'a', CLUSTER_LINGER_MS: '101' }), /CLUSTER_LINGER_MS must be an integer from 0 to 100/)
})

t.test('production publishes a real operator domain in sellers.json and app-ads.txt, never localhost', async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: 'production' }), /NODE_ENV=production needs OPERATOR_DOMAIN or BASE_URL/)
  t.match(loadConfig({ NODE_ENV: 'production', BASE_URL: 'https://ads.example.com' }).operator, { domain: 'ads.example.com' })
  t.match(loadConfig({ NODE_ENV: 'production', OPERATOR_DOMAIN: 'screens.example' }).operator, { domain: 'screens.example', email: 'adops@screens.example' })
  t.match(loadConfig({}).operator, { domain: 'localhost' }, 'a development start still needs nothing')
})

t.test('an unset ADMIN_TOKEN is generated once into DATA_DIR with mode 0600', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-token-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const first = resolveAdminToken(undefined, dir)
  t.match(first, { token: /^oohb_admin_/, generatedAt: join(dir, 'admin-token') })
  t.equal(statSync(join(dir, 'admin-token')).mode & 0o777, 0o600)
  t.equal(readFileSync(join(dir, 'admin-token'), 'utf8').trim(), first.token)
  t.equal(resolveAdminToken(undefined, dir).token, first.token, 'the same token on the next start')
  t.same(resolveAdminToken('explicit', dir), { token: 'explicit' })
})

t.test('with PORT=0 and no BASE_URL, URLs in responses name the bound port', async (t) => {
  const svc = await startTestService(t)
  const r = await svc.onboard('urls')
  t.equal(r.reply.body.data.sandbox.endpoints.bid, `POST ${svc.url}/openrtb/v2/bid`)
  const openapi = await svc.request('GET', '/openrtb/v2/openapi.json')
  t.equal(openapi.body.servers[0].url, svc.url)
})

t.test('BASE_URL is used as given', async (t) => {
  const svc = await startTestService(t, { BASE_URL: 'https://api.oohbid.example' })
  const r = await svc.request('GET', '/v1/partner/none')
  t.equal(r.body.error.docs_url, 'https://api.oohbid.example/docs/errors#route_not_found')
  t.equal((await svc.request('GET', '/ads.txt')).headers.get('location'), 'https://api.oohbid.example/app-ads.txt')
})
