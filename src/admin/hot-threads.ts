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
