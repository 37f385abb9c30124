import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'

// The player page served at embed_url: one small HTML response with its script and style inline (no framework, no
// second request before the first frame), the same for every screen: the page reads its token from the path and the
// device fingerprint from ?fp=. The script is src/player/page/player.js, type-checked by its own tsconfig.

const STYLE = 'html,body{margin:0;height:100%;background:#000;overflow:hidden;cursor:none}' +
  '#stage{position:fixed;inset:0;display:flex;align-items:center;justify-content:center}' +
  '#stage img,#stage video,#stage iframe{width:100%;height:100%;object-fit:contain;border:0;background:#000}' +
  '#overlay{position:fixed;right:2vmin;bottom:2vmin;padding:1.2vmin 2.4vmin;font:600 2.4vmin system-ui,sans-serif;color:#fff;background:rgba(0,0,0,.55);border:1px solid rgba(255,255,255,.6);border-radius:1vmin;cursor:pointer}' +
  '#overlay[hidden],body.hidden #stage,body.hidden #overlay{display:none}'

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`

/** The page and the headers it is served with. */
export interface PlayerPage {
  html: string
  headers: Record<string, string>
}

/** Builds the player page once, at start. */
export function playerPage (): PlayerPage {
  const script = readFileSync(new URL('./page/player.js', import.meta.url), 'utf8')
  const html = '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><title>oohbid player</title>' +
    `<style>${STYLE}</style></head><body><div id="stage"></div><button id="overlay" type="button" hidden>More</button>` +
    `<script>${script}</script></body></html>`
  // Only this page's own script and style run; media come from this service (or blob: copies kept for outages);
  // bid markup renders in a sandboxed frame and may show https images. Operators may frame the page in their own.
  const csp = [
    "default-src 'none'", `script-src ${hash(script)}`, `style-src ${hash(STYLE)}`, "img-src 'self' blob: data: https:",
    "media-src 'self' blob:", "connect-src 'self'", "frame-src 'self'", "base-uri 'none'", "form-action 'none'"
  ].join('; ')
  return { html, headers: { 'content-security-policy': csp, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' } }
}
