import { createServer } from "node:net"
import type { AddressInfo } from "node:net"

/** `http://127.0.0.1:<port>` where nobody listens (bound, then closed): every connect is refused. */
export const closedPortUrl = () =>
  new Promise<string>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(`http://127.0.0.1:${port}`))
    })
  })
