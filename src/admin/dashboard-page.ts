/**
 * The operator dashboard page (GET /admin/dashboard): static, holding no data. Its script reads the operator token
 * from the URL fragment (#token=..., which browsers never send) or asks for it, keeps it for the tab, polls
 * GET /admin/v1/dashboard every 2 s, and draws each series as a sparkline of the last three minutes: rates and
 * windowed latency are the differences between an answer and the one 10 s before (spots and bids come in waves).
 */
export const DASHBOARD_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>oohbid operator dashboard</title>
<style>
body{font:14px system-ui,sans-serif;margin:0;background:#f4f6f8;color:#1d2733}
header{background:#1d2733;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:baseline}
header h1{font-size:17px;margin:0}#status{opacity:.8}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:14px;padding:16px 20px}
.card{background:#fff;border-radius:8px;padding:12px 14px;box-shadow:0 1px 2px #0002}
.card h2{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:#5b6b7c;margin:0 0 4px}
.value{font-size:26px;font-weight:600}.unit{font-size:13px;color:#5b6b7c;margin-left:4px}
svg{display:block;width:100%;height:48px;margin-top:6px}
table{width:100%;border-collapse:collapse}td{padding:3px 0;border-top:1px solid #eef1f4}td:last-child{text-align:right}
.wide{grid-column:span 2}form{padding:40px}
</style></head>
<body>
<header><h1>oohbid operator dashboard</h1><span id="status">connecting...</span></header>
<form id="login" hidden><label>Operator token <input id="token" type="password" size="50" autocomplete="off"></label> <button>Open</button></form>
<main id="cards" hidden>
<section class="card"><h2>Spots decided</h2><span class="value" id="spots-rate">-</span><span class="unit">/s</span><svg id="spots-chart"></svg></section>
<section class="card"><h2>Fill rate</h2><span class="value" id="fill-rate">-</span><span class="unit">spots won by a bid</span><svg id="fill-chart"></svg></section>
<section class="card"><h2>Win rate</h2><span class="value" id="win-rate">-</span><span class="unit">of accepted bids</span><svg id="win-chart"></svg></section>
<section class="card"><h2>POST /bid latency</h2><span class="value" id="latency-p99">-</span><span class="unit">ms p99 (p50 <span id="latency-p50">-</span>)</span><svg id="latency-chart"></svg></section>
<section class="card"><h2>ClickHouse lag</h2><span class="value" id="ch-lag">-</span><span class="unit">s, <span id="ch-pending">-</span> events waiting</span><svg id="ch-chart"></svg></section>
<section class="card"><h2>Moderation queue</h2><span class="value" id="moderation">-</span><span class="unit">creatives</span><svg id="moderation-chart"></svg></section>
<section class="card"><h2>Notices and webhooks waiting</h2><span class="value" id="notices">-</span><span class="unit">outbox <span id="outbox">-</span></span><svg id="notices-chart"></svg></section>
<section class="card wide"><h2>Top screens, last minute or two</h2><table><tbody id="top-screens"></tbody></table></section>
</main>
<script>
'use strict'
const POINTS = 90
const WINDOW = 5
const series = {}
const answers = []
let token = null
let polling = false
/** A token given in the fragment (on load, or pasted into an open tab) is kept for the tab and taken off the address. */
function tokenFromFragment () {
  const given = new URLSearchParams(location.hash.slice(1)).get('token')
  if (given) { sessionStorage.setItem('oohbid-admin-token', given); history.replaceState(null, '', location.pathname) }
  token = sessionStorage.getItem('oohbid-admin-token')
}
const $ = (id) => document.getElementById(id)
function spark (id, value) {
  const points = (series[id] = series[id] || [])
  points.push(value)
  if (points.length > POINTS) points.shift()
  const max = Math.max(...points, 1e-9)
  const svg = $(id)
  const w = svg.clientWidth || 240
  const xy = points.map((v, i) => (i * w / (POINTS - 1)).toFixed(1) + ',' + (46 - 44 * v / max).toFixed(1)).join(' ')
  svg.innerHTML = '<polyline fill="none" stroke="#2f6fde" stroke-width="2" points="' + xy + '"/>'
}
function quantile (now, before, q) {
  const total = now.count - (before ? before.count : 0)
  if (total <= 0) return null
  for (let i = 0; i < now.counts.length; i++) {
    if (now.counts[i] - (before ? before.counts[i] : 0) >= q * total) return now.bounds_seconds[i] * 1000
  }
  return now.bounds_seconds[now.bounds_seconds.length - 1] * 1000
}
const fmt = (v, digits) => v === null || !Number.isFinite(v) ? '-' : v.toFixed(digits)
function draw (d) {
  const s = d.spots
  const decided = s.guaranteed + s.preferred + s.pmp + s.open_auction + s.house
  // A restarted service counts from zero again: rates start over rather than go negative.
  const newest = answers[answers.length - 1]
  if (newest && (decided < newest.decided || d.bid_latency.count < newest.bid_latency.count)) answers.length = 0
  const last = answers[0]
  const seconds = last ? (Date.parse(d.at) - Date.parse(last.at)) / 1000 : 0
  const spotsRate = last && seconds > 0 ? (decided - last.decided) / seconds : 0
  const fill = decided > 0 ? d.bids.won / decided : null
  const win = d.bids.accepted > 0 ? d.bids.won / d.bids.accepted : null
  const p99 = quantile(d.bid_latency, last && last.bid_latency, 0.99)
  const p50 = quantile(d.bid_latency, last && last.bid_latency, 0.5)
  $('spots-rate').textContent = fmt(spotsRate, 1); spark('spots-chart', spotsRate)
  $('fill-rate').textContent = fill === null ? '-' : fmt(100 * fill, 1) + '%'; spark('fill-chart', fill || 0)
  $('win-rate').textContent = win === null ? '-' : fmt(100 * win, 1) + '%'; spark('win-chart', win || 0)
  $('latency-p99').textContent = fmt(p99, 2); $('latency-p50').textContent = fmt(p50, 2); spark('latency-chart', p99 || 0)
  $('ch-lag').textContent = fmt(d.clickhouse.lag_seconds, 1); $('ch-pending').textContent = d.clickhouse.pending_events; spark('ch-chart', d.clickhouse.lag_seconds)
  $('moderation').textContent = d.moderation_queue; spark('moderation-chart', d.moderation_queue)
  $('notices').textContent = d.notices_pending; $('outbox').textContent = d.outbox_pending; spark('notices-chart', d.notices_pending)
  const rows = $('top-screens')
  rows.textContent = ''
  for (const t of d.top_screens) {
    const tr = rows.insertRow()
    tr.insertCell().textContent = t.name
    tr.insertCell().textContent = t.spots + ' spots'
  }
  $('status').textContent = 'up ' + d.uptime_seconds + ' s, ' + decided + ' spots decided, ' + d.bids.accepted + ' bids accepted, ' + (d.clickhouse.connected ? 'ClickHouse connected' : 'ClickHouse unavailable') + ', updated ' + new Date(d.at).toLocaleTimeString()
  answers.push({ at: d.at, decided, bid_latency: d.bid_latency })
  if (answers.length > WINDOW) answers.shift()
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1)
}
async function poll () {
  polling = true
  try {
    const res = await fetch('/admin/v1/dashboard', { headers: { authorization: 'Bearer ' + token } })
    if (res.status === 401) { sessionStorage.removeItem('oohbid-admin-token'); token = null; polling = false; return ask('That token was refused.') }
    const body = await res.json()
    if (body.success) { $('cards').hidden = false; draw(body.data) } else $('status').textContent = body.error
  } catch (err) {
    $('status').textContent = 'unreachable: ' + err.message
  }
  setTimeout(poll, 2000)
}
function ask (why) {
  $('status').textContent = why
  $('cards').hidden = true
  $('login').hidden = false
  $('login').onsubmit = (e) => { e.preventDefault(); token = $('token').value.trim(); sessionStorage.setItem('oohbid-admin-token', token); start() }
}
function start () {
  tokenFromFragment()
  if (!token) return ask('The dashboard needs the operator token (ADMIN_TOKEN, or the file DATA_DIR/admin-token).')
  $('login').hidden = true
  if (!polling) poll()
}
addEventListener('hashchange', start)
start()
</script>
</body></html>
`
