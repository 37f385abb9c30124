/**
 * The record a cluster node locks (RouteDef.exclusive) to rewrite a campaign, deal or media buy where no booking of
 * screen time decides the race: a campaign's pause through one node and its dated move on another cannot write over
 * each other, and the catalog's time-driven moves (holds expiring, campaigns following their dates, deals ending) take
 * the same lock, so each happens, and raises its event, once. Screen time itself is decided in the partitions' logs
 * (RouteDef.books, src/campaigns/capacity-logs.ts), never under this lock. The lock lapses with a TTL, so what it
 * guards is what a paused holder writing late cannot make wrong in money: the next step of the issue-47 plan moves it
 * to the claims log.
 */
export function catalogRecord (): string {
  return 'catalog'
}
