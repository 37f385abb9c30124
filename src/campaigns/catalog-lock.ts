/**
 * The record a cluster node locks (RouteDef.exclusive) to rewrite a campaign, deal or media buy where no booking of
 * screen time decides the race: a campaign's pause through one node and its dated move on another cannot write over
 * each other, and the catalog's time-driven moves (holds expiring, campaigns following their dates, deals ending) take
 * the same lock, so each happens, and raises its event, once. Screen time itself is decided in the partitions' logs
 * (RouteDef.books, src/campaigns/capacity-logs.ts), never under this lock. A holder paused past the lock's 30 s is
 * taken over, and what it writes when it wakes is refused where it would take effect (src/cluster/fenced-commits.ts).
 */
export function catalogRecord (): string {
  return 'catalog'
}
