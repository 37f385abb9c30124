// The piscina baselines' worker: scores one body, or a batch of them.
import { scoreBody } from './score-work.js'

export default function score (task: string | string[]): { status: number, body: string } | Array<{ status: number, body: string }> {
  return Array.isArray(task) ? task.map(scoreBody) : scoreBody(task)
}
