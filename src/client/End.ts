/** Marks the end of the client's queue (close) and of its outcome stream. */
export const End = Symbol.for("hookrelay/client/End")
export type End = typeof End
