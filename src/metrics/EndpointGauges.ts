import { Context, Metric } from "effect"

/** Each URL's circuit by source and position in its settings (≤ 5 per source): 0 closed, 1 open, 2 probing, 3 disabled. */
export const endpointCircuit = Metric.gauge("hookrelay_endpoint_circuit_state", {
  description: "A webhook URL's circuit: 0 closed, 1 open (jobs held), 2 probing, 3 disabled; by source and URL index"
})

export const endpointFailures = Metric.gauge("hookrelay_endpoint_consecutive_failures", {
  description: "Consecutive failed attempts of a webhook URL in this process; by source and URL index"
})

// One set of labels, in this order: the order /metrics writes them in.
const labelled = (gauge: typeof endpointCircuit, sourceId: string, index: number) =>
  Metric.withAttributes(gauge, { source: sourceId, endpoint: String(index) })

// Set outside any fiber: the process's default registry, the one /metrics reads.
const noContext = Context.empty()

const circuitValue = { closed: 0, open: 1, probing: 2, disabled: 3 } as const

/** Sets both gauges of one URL of a source. */
export const setEndpointGauges = (
  sourceId: string,
  index: number,
  state: keyof typeof circuitValue,
  consecutiveFailures: number
): void => {
  labelled(endpointCircuit, sourceId, index).updateUnsafe(circuitValue[state], noContext)
  labelled(endpointFailures, sourceId, index).updateUnsafe(consecutiveFailures, noContext)
}
