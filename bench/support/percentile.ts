/** The `p`th percentile of `values` (nearest rank, from below). */
export const percentile = (values: ReadonlyArray<number>, p: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!
