#!/usr/bin/env node
// The operator CLI: a thin client of /admin/v1, so every action it takes is the audited API call.
import { existsSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.js'
import { adminTokenPath } from '../src/admin/token.js'

const USAGE = `Usage: npm run admin -- <command> [options]

  seats list [--status sandbox|approved|suspended|revoked] [--limit N]
  seats show <seat_id>
  seats approve|suspend|reinstate|revoke <seat_id> [--reason TEXT]
  seats limits <seat_id> <group>=<requests per window|default> ... [--reason TEXT]
  keys show <key_id>
  keys scopes <key_id> <scope,scope,...> [--reason TEXT]
  keys revoke <key_id> [--reason TEXT]
  audit [--subject seat:<id>|key:<id>] [--limit N]
  aliases list
  aliases set <alias> --name NAME --ips CIDR,CIDR,... [--signed] [--rpm N] [--tmax MS] [--seats a,b]
                      [--no-win] [--no-loss] [--no-billing] [--disabled]
  aliases rotate|delete <alias>

Options: --json prints the response data as JSON.
Environment: BASE_URL (default http://127.0.0.1:$PORT), ADMIN_TOKEN (default: DATA_DIR/admin-token).`

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  status: { type: 'string' },
  limit: { type: 'string' },
  reason: { type: 'string' },
  subject: { type: 'string' },
  name: { type: 'string' },
  ips: { type: 'string' },
  signed: { type: 'boolean' },
  rpm: { type: 'string' },
  tmax: { type: 'string' },
  seats: { type: 'string' },
  'no-win': { type: 'boolean' },
  'no-loss': { type: 'boolean' },
  'no-billing': { type: 'boolean' },
  disabled: { type: 'boolean' }
} as const

interface Args { positional: string[], flags: ReturnType<typeof parseArgs<{ options: typeof OPTIONS, allowPositionals: true }>>['values'] }

/** The command line, strictly: an option the CLI does not know (a typo such as --limt) is an error, not ignored. */
function readArgs (argv: string[]): Args {
  try {
    const { positionals, values } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
    return { positional: positionals, flags: values }
  } catch (err) {
    throw new CliError(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`)
  }
}

class CliError extends Error {}

async function call (method: string, path: string, body?: unknown): Promise<any> {
  const config = loadConfig()
  const base = process.env.BASE_URL ?? `http://127.0.0.1:${config.port}`
  const tokenFile = adminTokenPath(config.dataDir)
  const token = config.adminToken ?? (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined)
  if (token === undefined) throw new CliError(`No operator token: set ADMIN_TOKEN or start the service once to create ${tokenFile}.`)
  const res = await fetch(base.replace(/\/+$/, '') + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined
  })
  const json = await res.json() as { success: boolean, data?: unknown, error?: string, error_code?: string, request_id?: string }
  if (!json.success) throw new CliError(`${res.status} ${json.error_code}: ${json.error} (${json.request_id})`)
  return json.data
}

function reason (flags: Args['flags']): { reason?: string } {
  return typeof flags.reason === 'string' ? { reason: flags.reason } : {}
}

function seatLine (s: { seat_id: string, status: string, company_name: string, rate_limits: Record<string, number> }): string {
  const limits = Object.entries(s.rate_limits).map(([g, n]) => `${g}=${n}`).join(' ')
  return `${s.seat_id}\t${s.status}\t${s.company_name}${limits ? `\tlimits: ${limits}` : ''}`
}

function aliasLine (a: { alias: string, status: string, endpoint: string, ip_allowlist: string[], require_signature: boolean, rate_limit_per_minute: number }): string {
  return `${a.alias}\t${a.status}\t${a.endpoint}\tips ${a.ip_allowlist.join(',')}\t${a.require_signature ? 'signed' : 'unsigned'}\t${a.rate_limit_per_minute}/min`
}

async function main (argv: string[]): Promise<void> {
  const { positional, flags } = readArgs(argv)
  const [area, verb, id, ...rest] = positional
  if (flags.help || area === undefined) { console.log(USAGE); return }
  let data: any
  let text: string
  if (area === 'seats' && verb === 'list') {
    const q = new URLSearchParams()
    if (typeof flags.status === 'string') q.set('status', flags.status)
    if (typeof flags.limit === 'string') q.set('limit', flags.limit)
    data = await call('GET', `/admin/v1/seats?${q}`)
    text = data.seats.map(seatLine).join('\n') || '(no seats)'
  } else if (area === 'seats' && verb === 'show' && id) {
    data = await call('GET', `/admin/v1/seats/${encodeURIComponent(id)}`)
    text = JSON.stringify(data, null, 2)
  } else if (area === 'seats' && ['approve', 'suspend', 'reinstate', 'revoke'].includes(verb ?? '') && id) {
    data = await call('POST', `/admin/v1/seats/${encodeURIComponent(id)}/${verb}`, reason(flags))
    text = seatLine(data)
  } else if (area === 'seats' && verb === 'limits' && id && rest.length > 0) {
    const limits: Record<string, number | null> = {}
    for (const pair of rest) {
      const [group, value] = pair.split('=')
      if (!group || value === undefined) throw new CliError(`Expected group=value, got ${pair}`)
      limits[group] = value === 'default' ? null : Number(value)
    }
    data = await call('PUT', `/admin/v1/seats/${encodeURIComponent(id)}/rate-limits`, { limits, ...reason(flags) })
    text = seatLine(data)
  } else if (area === 'keys' && verb === 'show' && id) {
    data = await call('GET', `/admin/v1/keys/${encodeURIComponent(id)}`)
    text = JSON.stringify(data, null, 2)
  } else if (area === 'keys' && verb === 'scopes' && id && rest[0] !== undefined) {
    data = await call('PATCH', `/admin/v1/keys/${encodeURIComponent(id)}`, { scopes: rest[0].split(',').filter(Boolean), ...reason(flags) })
    text = `${data.key_id}\t${data.scopes.join(',')}`
  } else if (area === 'keys' && verb === 'revoke' && id) {
    data = await call('POST', `/admin/v1/keys/${encodeURIComponent(id)}/revoke`, reason(flags))
    text = `${data.key_id}\trevoked ${data.revoked_at}`
  } else if (area === 'aliases' && verb === 'list') {
    data = await call('GET', '/admin/v1/bidder-aliases')
    text = data.aliases.map(aliasLine).join('\n') || '(no aliases)'
  } else if (area === 'aliases' && verb === 'set' && id && typeof flags.name === 'string' && typeof flags.ips === 'string') {
    const body: Record<string, unknown> = { name: flags.name, ip_allowlist: flags.ips.split(',').filter(Boolean), require_signature: flags.signed === true, status: flags.disabled === true ? 'disabled' : 'active' }
    if (typeof flags.rpm === 'string') body.rate_limit_per_minute = Number(flags.rpm)
    if (typeof flags.tmax === 'string') body.default_tmax_ms = Number(flags.tmax)
    if (typeof flags.seats === 'string') body.seats = flags.seats.split(',').filter(Boolean)
    body.notices = { win: flags['no-win'] !== true, loss: flags['no-loss'] !== true, billing: flags['no-billing'] !== true }
    data = await call('PUT', `/admin/v1/bidder-aliases/${encodeURIComponent(id)}`, body)
    text = aliasLine(data) + (data.signing_secret !== undefined ? `\nsigning secret (shown once): ${data.signing_secret}` : '')
  } else if (area === 'aliases' && verb === 'rotate' && id) {
    data = await call('POST', `/admin/v1/bidder-aliases/${encodeURIComponent(id)}/rotate-secret`, {})
    text = `${aliasLine(data)}\nsigning secret (shown once): ${data.signing_secret}`
  } else if (area === 'aliases' && verb === 'delete' && id) {
    data = await call('DELETE', `/admin/v1/bidder-aliases/${encodeURIComponent(id)}`)
    text = `${data.alias}\tdeleted`
  } else if (area === 'audit') {
    const q = new URLSearchParams()
    if (typeof flags.subject === 'string') q.set('subject', flags.subject)
    if (typeof flags.limit === 'string') q.set('limit', flags.limit)
    data = await call('GET', `/admin/v1/audit?${q}`)
    text = data.events.map((e: { at: string, type: string, subject: string, reason?: string }) => `${e.at}\t${e.type}\t${e.subject}${e.reason ? `\t${e.reason}` : ''}`).join('\n') || '(no events)'
  } else {
    throw new CliError(USAGE)
  }
  console.log(flags.json ? JSON.stringify(data, null, 2) : text)
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof CliError ? err.message : err)
  process.exit(1)
})
