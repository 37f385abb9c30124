import type { Deps } from '../deps.js'
import { ApiError } from '../errors.js'
import type { HotThreadEnded } from '../generated/types.js'
import { held, ok, route, type RouteDef } from '../http/route.js'
import { iso } from '../clock.js'

/** Operator control of the hot threads. */
export function adminHotThreadRoutes ({ config, endThread }: Deps): RouteDef[] {
  return [
    route({
      tag: 'Operator',
      envelope: 'flat',
      auth: 'admin',
      rateGroup: 'ops',
      method: 'post',
      path: '/admin/v1/hot-threads/:thread/end',
      summary: 'End a hot thread at once, as a crash would',
      description: 'For a thread that is stuck, and for soak tests (bench/soak ends one under load). The thread stops where it is, with no drain: its requests in flight and its open connections are lost, as when it crashes. The supervisor starts another in its place within about a second; the other threads serve meanwhile, and new connections go to them until the new one listens. thread: 1..HOT_THREADS (400 invalid_parameter otherwise); 404 not_found when that thread is restarting. The answer is written before the thread ends, whichever thread serves it. Audited as audit.hot_thread.ended. With dry_run nothing is ended.',
      data: 'HotThreadEnded',
      errors: ['not_found'],
      gathered: true,
      handler: (ctx) => {
        const thread = Number(ctx.params.thread)
        if (!Number.isInteger(thread) || thread < 1 || thread > config.hotThreads) throw new ApiError('invalid_parameter', `thread is a number from 1 to ${config.hotThreads}.`, { param: 'thread' })
        const answer: HotThreadEnded = { thread, ended_at: iso(ctx.now) }
        if (ctx.dryRun) return ok(answer)
        return held(endThread(thread).then((ended) => {
          if (!ended) throw new ApiError('not_found', `Hot thread ${thread} is restarting.`, { param: 'thread' })
          return ok(answer)
        }))
      }
    })
  ]
}
