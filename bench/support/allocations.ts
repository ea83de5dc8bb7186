import { Session } from "node:inspector"

/**
 * Heap bytes `work` allocates, garbage included: V8's sampling heap profile while it runs, keeping what the
 * collections freed (as `bench/dispatcher.ts` takes its allocation profile).
 */
export const allocatedBytes = async (work: () => void | Promise<void>): Promise<number> => {
  const session = new Session()
  session.connect()
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) =>
      session.post(method, params, (error, result) => error === null ? resolve(result) : reject(error))
    )
  await post("HeapProfiler.startSampling", {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  await work()
  const { profile } = await post("HeapProfiler.stopSampling")
  session.disconnect()
  const total = (node: { selfSize: number; children: ReadonlyArray<any> }): number =>
    node.children.reduce((sum: number, child) => sum + total(child), node.selfSize)
  return total(profile.head)
}
