// The baseline: uWS answering a constant, with nothing of ours in the way. What this machine can do at best.
import { readFileSync } from 'node:fs'
import uWS from 'uWebSockets.js'

const file = process.env.BARE_BODY_FILE
const body = file !== undefined ? readFileSync(file, 'utf8') : '{"success":true}'
uWS.App().any('/*', (res) => {
  res.cork(() => {
    res.writeHeader('Content-Type', 'application/json')
    res.end(body)
  })
}).listen('127.0.0.1', 0, (socket) => {
  process.stdout.write(`bare uws listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
})
