import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { inherited, startProcess } from './helpers/process.js'

const run = promisify(execFile)

t.test('the fleet simulator registers and streams through the public API, and reruns reuse its partners', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-sim-'))
  const env = inherited()
  const { child, url } = await startProcess(dataDir, { ADMIN_TOKEN: 'sim-admin', LOG_LEVEL: 'warn' })
  const exited = new Promise((r) => child.once('exit', r))
  t.teardown(async () => { child.kill('SIGTERM'); await exited; rmSync(dataDir, { recursive: true, force: true }) })
  const state = join(dataDir, 'fleet.json')
  const sim = () => run(process.execPath, ['dist/scripts/simulate-fleet.js', '--screens', '300', '--duration', '2', '--base-url', url, '--state', state], { env })
  const first = await sim()
  t.match(first.stdout, /registered 300 screens for 3 partners/)
  t.match(first.stdout, /sent \d+ heartbeats and \d+ audience updates/)
  t.ok(existsSync(state), 'partner keys kept for the next run')
  const admin = { authorization: 'Bearer sim-admin', 'content-type': 'application/json' }
  await fetch(`${url}/admin/v1/settings`, { method: 'PUT', headers: admin, body: JSON.stringify({ partner_display: true }) })
  const onboard = await (await fetch(`${url}/openrtb/v2/onboard`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ company_name: 'Sim Buyer', seat_id: 'simbuyer', contact_email: 'b@sim.example' }) })).json() as any
  const key = onboard.data.api_key.key
  const adslots = async (q: string) => (await (await fetch(`${url}/openrtb/v2/adslots?${q}`, { headers: { authorization: `Bearer ${key}` } })).json() as any).data
  const all = await adslots('source=all&limit=200&include_count=true')
  t.equal(all.total_count, 300, 'every simulated screen is listed')
  const partner = await adslots('source=partner&limit=1')
  t.ok(partner.total_count > 0 && partner.total_count < 300, `the reseller's ${partner.total_count} screens are partner inventory`)
  t.ok(all.fein_coverage.screens_with_fein > 150 && all.fein_coverage.screens_without_fein > 30, 'most screens have sensors, some do not')
  t.equal(all.screens[0].data_quality, 'live', 'streamed audience data makes screens live')
  t.ok(new Set(all.screens.map((s: any) => s.country)).size > 3, 'screens span countries')
  const partners = await (await fetch(`${url}/admin/v1/partners`, { headers: admin })).json() as any
  t.equal(partners.data.partners.length, 3)
  const second = await sim()
  t.match(second.stdout, /registered 300 screens for 3 partners/)
  t.equal((await (await fetch(`${url}/admin/v1/partners`, { headers: admin })).json() as any).data.partners.length, 3, 'no new partners on a rerun')
  t.equal((await adslots('source=all&limit=1&include_count=true')).total_count, 300, 'devices are upserted, not duplicated')
})
