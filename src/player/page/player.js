// @ts-check
// The screen player: the page at embed_url (src/hot/player/page.ts inlines this file). It asks the feed for a spot at
// every slot, plays it full screen, reports render_started and play_completed (which bill the spot and sign its
// proof of play), heartbeats while open, and keeps playing the last good creatives when the feed cannot be reached.
// No framework: it must start fast on a weak signage box. Operators embedding it read the events and the global
// object documented in the OpenAPI description (Screen player).
(() => {
  const token = location.pathname.split('/')[2] ?? ''
  const fp = new URLSearchParams(location.search).get('fp') ?? undefined
  const base = `/embed/${token}`
  const stage = /** @type {HTMLElement} */ (document.getElementById('stage'))
  const overlay = /** @type {HTMLElement} */ (document.getElementById('overlay'))
  /** Creatives kept for an outage: the last few that played, with their bytes as object URLs. */
  const KEEP = 5
  /** Events that could not be sent yet, retried with their original time. */
  const PENDING_KEY = `oohbid:pending:${token}`

  /**
   * @typedef {{ creative_id: string, content_type: string, url: string, click_url?: string, duration_seconds?: number }} Creative
   * @typedef {{ spot_id: string | null, screen_id: string, tier: string, starts_at: string, duration_seconds: number, creative: Creative | null, adm?: string, events_url?: string }} Spot
   * @typedef {{ url: string, body: Record<string, unknown> }} Pending
   */

  const state = {
    /** @type {'starting' | 'playing' | 'idle' | 'closed' | 'hidden' | 'stopped'} */
    state: 'starting',
    online: false,
    hidden: false,
    /** @type {string | null} */ screen_id: null,
    /** @type {Spot | null} */ spot: null,
    plays: 0,
    offline_plays: 0,
    /** @type {number | null} */ first_frame_ms: null,
    /** @type {string | null} */ last_feed_at: null,
    /** @type {string | null} */ error: null
  }
  /** @type {Map<string, { spot: Spot, src: string }>} */
  const kept = new Map()
  /** @type {Pending[]} */
  let pending = []
  try { pending = JSON.parse(localStorage.getItem(PENDING_KEY) ?? '[]') } catch {}
  /** @type {(() => void) | null} */
  let interrupt = null
  /** @type {(() => void) | null} */
  let resume = null
  let heartbeatSeconds = 30
  /** The service's clock minus this device's, from each spot's starts_at: reports carry the service's time even when a signage box's clock is off. */
  let skew = 0
  const serviceNow = () => Date.now() + skew

  /** @param {string} name @param {Record<string, unknown>} detail */
  const emit = (name, detail) => window.dispatchEvent(new CustomEvent(name, { detail }))

  /** @param {string} url @param {Record<string, unknown>} body */
  async function post (url, body) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const json = await res.json().catch(() => ({}))
    if (!res.ok) throw Object.assign(new Error(json.error ?? `HTTP ${res.status}`), { status: res.status, code: json.error_code })
    return json.data
  }

  /** Sends an event now, or keeps it (with its time) for when the service can be reached. @param {string} url @param {Record<string, unknown>} body */
  async function report (url, body) {
    try {
      await post(url, body)
    } catch (err) {
      const status = /** @type {{ status?: number }} */ (err).status
      // A 4xx is the service's final word on the event (a duplicate, a spot it does not know): nothing to retry.
      if (status !== undefined && status < 500) return
      pending.push({ url, body })
      pending = pending.slice(-200)
      try { localStorage.setItem(PENDING_KEY, JSON.stringify(pending)) } catch {}
    }
  }

  async function flush () {
    if (pending.length === 0) return
    const waiting = pending
    pending = []
    for (const p of waiting) await report(p.url, p.body)
    try { localStorage.setItem(PENDING_KEY, JSON.stringify(pending)) } catch {}
  }

  async function heartbeat () {
    try {
      const data = await post(`${base}/heartbeat`, fp !== undefined ? { fp } : {})
      heartbeatSeconds = data.heartbeat_seconds ?? heartbeatSeconds
      state.screen_id = data.screen_id ?? state.screen_id
    } catch {}
    setTimeout(heartbeat, heartbeatSeconds * 1000)
  }

  /** The bytes of a creative as an object URL, so it can play again with no network. @param {Creative} c */
  async function load (c) {
    const have = kept.get(c.creative_id)
    if (have !== undefined) return have.src
    const res = await fetch(c.url)
    if (!res.ok) throw new Error(`asset HTTP ${res.status}`)
    return URL.createObjectURL(await res.blob())
  }

  /** @param {Spot} spot @param {string} src */
  function keep (spot, src) {
    if (spot.creative === null) return
    kept.delete(spot.creative.creative_id)
    kept.set(spot.creative.creative_id, { spot, src })
    while (kept.size > KEEP) {
      const [id, old] = /** @type {[string, { src: string }]} */ (kept.entries().next().value)
      URL.revokeObjectURL(old.src)
      kept.delete(id)
    }
  }

  /** @param {number} ms */
  const wait = (ms) => new Promise((resolve) => {
    const timer = setTimeout(() => { interrupt = null; resolve(true) }, ms)
    interrupt = () => { clearTimeout(timer); interrupt = null; resolve(false) }
  })

  /** Shows a spot's creative; resolves when its first frame is on screen. @param {Spot} spot @param {string | null} src */
  async function show (spot, src) {
    stage.replaceChildren()
    const c = spot.creative
    if (spot.adm !== undefined && (c === null || src === null)) {
      const frame = document.createElement('iframe')
      frame.setAttribute('sandbox', '')
      frame.srcdoc = spot.adm
      stage.append(frame)
      return 'html'
    }
    if (c === null || src === null) return null
    if (c.content_type.startsWith('video/')) {
      const video = document.createElement('video')
      video.muted = true
      video.playsInline = true
      // A video shorter than the slot plays again until the slot ends.
      video.loop = true
      video.src = src
      stage.append(video)
      await video.play()
      return 'video'
    }
    const img = document.createElement('img')
    img.alt = ''
    img.src = src
    await img.decode()
    stage.append(img)
    return 'image'
  }

  /** Plays one spot for its slot: events, reports, then clears the stage. @param {Spot} spot @param {boolean} offline */
  async function play (spot, offline) {
    let src = null
    if (spot.creative !== null) {
      try { src = await load(spot.creative) } catch (err) { state.error = String(err) }
    }
    const type = await show(spot, src).catch((err) => { state.error = String(err); return null })
    const slotMs = spot.duration_seconds * 1000
    if (type === null) {
      state.state = spot.tier === 'closed' ? 'closed' : 'idle'
      await wait(slotMs)
      return
    }
    if (src !== null) keep(spot, src)
    const shownAt = performance.now()
    // From navigation start: what a viewer waits for after the page is opened.
    state.first_frame_ms ??= Math.round(shownAt)
    state.state = 'playing'
    state.spot = spot
    const creativeId = spot.creative?.creative_id ?? null
    const click = spot.creative?.click_url
    overlay.hidden = click === undefined
    emit('service:ad_started', { type, spot_id: spot.spot_id, creative_id: creativeId, tier: spot.tier, duration_seconds: spot.duration_seconds, offline })
    if (!offline && spot.events_url !== undefined) void report(spot.events_url, { event: 'render_started', at: serviceNow() })
    const whole = await wait(slotMs)
    const durationMs = Math.round(performance.now() - shownAt)
    stage.replaceChildren()
    overlay.hidden = true
    state.spot = null
    if (offline) state.offline_plays++
    else state.plays++
    emit('service:ad_ended', { spot_id: spot.spot_id, creative_id: creativeId, completed: whole, duration_ms: durationMs, offline })
    // Only a spot that played its whole slot counts; one cut short by hide() is not an impression.
    if (whole && !offline && spot.events_url !== undefined) void report(spot.events_url, { event: 'play_completed', duration_ms: durationMs, at: serviceNow() })
  }

  /** The next spot from the feed, or one of the kept creatives (not billed) when the feed cannot be reached. */
  async function next () {
    try {
      /** @type {Spot} */
      const spot = await post(`${base}/spots`, fp !== undefined ? { fp } : {})
      skew = Date.parse(spot.starts_at) - Date.now()
      state.online = true
      state.error = null
      state.screen_id = spot.screen_id
      state.last_feed_at = new Date().toISOString()
      void flush()
      return { spot, offline: false }
    } catch (err) {
      const status = /** @type {{ status?: number }} */ (err).status
      state.online = status !== undefined && status < 500
      state.error = String(err)
      const all = [...kept.values()]
      const fallback = all[(state.offline_plays + state.plays) % Math.max(1, all.length)]
      if (status === 404 || status === 409) return { spot: null, offline: true }
      return { spot: fallback === undefined ? null : { ...fallback.spot, spot_id: null, events_url: undefined }, offline: true }
    }
  }

  async function run () {
    for (;;) {
      if (state.hidden) {
        state.state = 'hidden'
        await new Promise((resolve) => { resume = () => { resume = null; resolve(undefined) } })
        continue
      }
      const { spot, offline } = await next()
      // hide() while the spot was on its way: it is not shown (nor reported, so not billed).
      if (state.hidden) continue
      if (spot === null) {
        state.state = 'idle'
        await wait(5000)
        continue
      }
      await play(spot, offline)
    }
  }

  overlay.addEventListener('click', () => {
    const spot = state.spot
    if (spot === null) return
    emit('service:overlay_clicked', { spot_id: spot.spot_id, creative_id: spot.creative?.creative_id ?? null, click_url: spot.creative?.click_url ?? null })
  })

  // Closing the page takes the screen offline at once instead of after the heartbeat timeout.
  addEventListener('pagehide', () => {
    void fetch(`${base}/leave`, { method: 'POST', keepalive: true, headers: { 'content-type': 'application/json' }, body: JSON.stringify(fp !== undefined ? { fp } : {}) }).catch(() => {})
  })

  /** The player's global object: what an operator's page embedding it may call. */
  const api = {
    version: '1.0',
    /** Hides the player: a spot on screen ends at once (not counted), and none starts until show(). */
    hide () {
      state.hidden = true
      document.body.classList.add('hidden')
      interrupt?.()
    },
    /** Shows the player again; the next spot starts now. */
    show () {
      state.hidden = false
      document.body.classList.remove('hidden')
      resume?.()
    },
    /** What the player is doing. */
    status () {
      const spot = state.spot
      return {
        state: state.hidden ? 'hidden' : state.state,
        online: state.online,
        screen_id: state.screen_id,
        spot_id: spot?.spot_id ?? null,
        creative_id: spot?.creative?.creative_id ?? null,
        tier: spot?.tier ?? null,
        plays: state.plays,
        offline_plays: state.offline_plays,
        pending_reports: pending.length,
        first_frame_ms: state.first_frame_ms,
        last_feed_at: state.last_feed_at,
        error: state.error
      }
    }
  }
  Object.defineProperty(window, 'oohbid', { value: Object.freeze(api), enumerable: true })
  void heartbeat()
  void run()
})()
