import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { readFileSync } from "node:fs"
import * as Path from "node:path"
import { parse } from "yaml"
import { isServerVariable } from "../../src/config/Environment.js"
import { ProvisioningFile } from "../../src/config/Provisioning.js"
import { repoRoot } from "../support/serverProcess.js"

/**
 * compose.yaml cannot run here (no Docker daemon): it is parsed and checked against the Dockerfile it builds, the
 * server's configuration table, the sources schema, and what the README says of it.
 */

interface Service {
  readonly image?: string
  readonly build?: string | { readonly context: string; readonly target?: string }
  readonly command?: ReadonlyArray<string>
  readonly environment?: Readonly<Record<string, string>>
  readonly ports?: ReadonlyArray<string>
  readonly configs?: ReadonlyArray<{ readonly source: string; readonly target: string }>
  readonly depends_on?: Readonly<Record<string, { readonly condition: string }>>
  readonly healthcheck?: { readonly test: ReadonlyArray<string> }
}
interface Compose {
  readonly services: Readonly<Record<string, Service>>
  readonly configs: Readonly<Record<string, { readonly content: string }>>
}

const read = (path: string) => readFileSync(Path.join(repoRoot, path), "utf8")
const compose = parse(read("compose.yaml"), { merge: true }) as Compose
const dockerfile = read("Dockerfile")
const readme = read("README.md")
const { services } = compose
const replicas = ["hookrelay-1", "hookrelay-2"] as const
/** A config's content as the container sees it: compose turns `$$` into `$`. */
const content = (name: string) => compose.configs[name]!.content.replaceAll("$$", "$")
const imagePort = /^ENV (?:.*\n)*?\s*PORT=(\d+)/m.exec(dockerfile)?.[1]

describe("compose.yaml", () => {
  it("runs PostgreSQL, two replicas of the image, the proxy in front of them and a receiver", () => {
    expect(Object.keys(services).sort()).toEqual(["hookrelay-1", "hookrelay-2", "postgres", "proxy", "receiver"])
    for (const name of replicas) {
      expect(services[name]!.build, name).toBe(".")
      // Only the proxy is published: one address for both.
      expect(services[name]!.ports, name).toBeUndefined()
    }
    expect(services.proxy!.ports).toEqual(["8080:8080"])
  })

  it("gives both replicas the one database, settings the server reads, and the sources file", () => {
    const postgres = services.postgres!.environment!
    const sources = Schema.decodeUnknownSync(ProvisioningFile)(JSON.parse(content("hookrelay-sources")))
    for (const name of replicas) {
      const replica = services[name]!
      const environment = replica.environment!
      expect(Object.keys(environment).filter((variable) => !isServerVariable(variable)), name).toEqual([])
      expect(environment.DATABASE_URL).toBe(
        `postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgres:5432/${postgres.POSTGRES_DB}`
      )
      expect(environment.HOOKRELAY_ADMIN_TOKEN).toMatch(/^\$\{HOOKRELAY_ADMIN_TOKEN:\?/)
      expect(replica.configs).toEqual([{ source: "hookrelay-sources", target: environment.HOOKRELAY_CONFIG }])
      // The receiver is a sibling container at a private address.
      expect(environment.HOOKRELAY_ALLOW_PRIVATE_NETWORKS).toBe("true")
      expect(replica.depends_on).toEqual({
        postgres: { condition: "service_healthy" },
        receiver: { condition: "service_started" }
      })
    }
    const receiver = services.receiver!
    expect(sources.sources.flatMap((source) => source.webhooks?.endpoints.map((endpoint) => endpoint.url))).toEqual([
      `http://receiver:${receiver.environment!.RECEIVER_PORT}/hook`
    ])
    expect(receiver.environment!.RECEIVER_SECRET).toBe(sources.sources[0]!.webhooks?.sharedSecret)
    expect(receiver.environment!.RECEIVER_HOST).toBe("0.0.0.0")
  })

  it("checks health as the image does, and starts each service once what it needs is healthy", () => {
    const imageCheck = /^HEALTHCHECK .* CMD (\[.*\])$/m.exec(dockerfile)?.[1]
    for (const name of replicas) {
      expect(["CMD", ...(JSON.parse(imageCheck!) as Array<string>)]).toEqual(services[name]!.healthcheck!.test)
    }
    expect(dockerfile).toContain("COPY scripts/healthcheck.sh /usr/local/bin/hookrelay-healthcheck")
    expect(services.postgres!.healthcheck!.test).toContain("pg_isready")
    expect(services.proxy!.healthcheck!.test.join(" ")).toContain("/healthz")
    expect(services.proxy!.depends_on).toEqual({
      "hookrelay-1": { condition: "service_healthy" },
      "hookrelay-2": { condition: "service_healthy" }
    })
  })

  it("puts one address in front of both replicas, at the port the image listens on", () => {
    const proxy = content("proxy")
    const upstream = [...proxy.matchAll(/^\s*server ([\w-]+):(\d+);/gm)].map((match) => [match[1], match[2]])
    expect(imagePort).toBe("8080")
    expect(upstream).toEqual(replicas.map((name) => [name, imagePort]))
    expect(proxy).toMatch(/listen 8080;/)
    expect(proxy).toContain("proxy_set_header Host $host;")
    expect(services.proxy!.configs).toEqual([{ source: "proxy", target: "/etc/nginx/conf.d/default.conf" }])
  })

  it("builds the receiver from a stage of the Dockerfile that has the receiver's dependencies", () => {
    const receiver = services.receiver!
    expect(receiver.build).toEqual({ context: ".", target: "pack" })
    expect(dockerfile).toMatch(/^FROM \S+ AS pack$/m)
    expect(receiver.command).toEqual(["node", "--import", "tsx", "scripts/receiver.ts"])
  })

  it("is what the README says", () => {
    const section = readme.slice(readme.indexOf("**Compose.**"), readme.indexOf("## Quick start"))
    for (const name of Object.keys(services)) expect(section, name).toContain(`\`${name}\``)
    expect(section).toContain("docker compose up --build`")
    const sources = Schema.decodeUnknownSync(ProvisioningFile)(JSON.parse(content("hookrelay-sources")))
    expect(section).toContain(`\`${sources.sources[0]!.writeKey}\``)
    expect(section).toContain(`\`${sources.sources[0]!.webhooks?.endpoints[0]?.url}\``)
    expect(section).toContain("`HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true`")
    expect(section).toContain("localhost:8080")
  })
})
