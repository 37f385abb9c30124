// The player benchmark's baseline: bare uWS serving the least page that can show an image (an <img> and a line of
// script noting when it is decoded) and the image itself. What a browser on this machine needs at best for a first
// frame. BARE_IMAGE_FILE names the image.
import { readFileSync } from 'node:fs'
import uWS from 'uWebSockets.js'

const image = readFileSync(process.env.BARE_IMAGE_FILE!)
const html = '<!doctype html><html><body style="margin:0;background:#000"><img id="i" src="/a.png" style="width:100%">' +
  '<script>document.getElementById("i").decode().then(()=>{window.firstFrame=Math.round(performance.now())})</script></body></html>'
uWS.App()
  .get('/a.png', (res) => { res.cork(() => { res.writeHeader('Content-Type', 'image/png').end(image) }) })
  .any('/*', (res) => { res.cork(() => { res.writeHeader('Content-Type', 'text/html').end(html) }) })
  .listen('127.0.0.1', 0, (socket) => {
    process.stdout.write(`bare page listening on http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`)
  })
