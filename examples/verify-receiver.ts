import { createServer } from "node:http"
import { Webhook } from "standardwebhooks"

// The source's whsec_ secret, as its PUT answer (or a rotation) showed it.
const webhook = new Webhook(process.env.WEBHOOK_SECRET!)
const port = Number(process.env.PORT ?? 9000)

createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    try {
      // Throws unless a signature matches and the timestamp is within 5 minutes (no replayed captures).
      const message = webhook.verify(Buffer.concat(chunks), request.headers as Record<string, string>)
      console.log("verified", request.headers["webhook-id"], JSON.stringify(message))
      response.writeHead(200).end()
    } catch (error) {
      console.log("refused", (error as Error).message)
      response.writeHead(401).end()
    }
  })
}).listen(port, "127.0.0.1", () => console.log(`receiver on ${port}`))
