// The funnel log's storage shape. A leaf.

/** A funnel record's key: the id of its first event and how many events it holds (their ids follow on, one apart). */
export type FunnelKey = [first: number, count: number]
