/** A function that runs fn on the next turn of the event loop, once however often it is called before then. */
export function onNextTurn (fn: () => void): () => void {
  let scheduled = false
  return () => {
    if (scheduled) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      fn()
    })
  }
}
