import { describe, expect, it } from "@effect/vitest"
import * as Path from "node:path"
import ts from "typescript"
import { calls } from "../../console/src/calls.js"
import { AdminContract, openApiDocument } from "../../src/ingest/AdminContract.js"
import { repoRoot } from "../support/serverProcess.js"

/**
 * The web console's admin calls are the contract's (issue #41). Its types check each call's group,
 * method, body and answer; the paths are checked here, since the console does not load the contract
 * at run time. And the console's own files stay browser code that imports the server's only as types.
 */

const consoleDir = Path.join(repoRoot, "console")
const consoleSrc = Path.join(consoleDir, "src") + Path.sep

describe("the console's admin calls", () => {
  const entries = Object.entries(calls)

  it("are endpoints of the contract, with its method and path", () => {
    expect(entries.length).toBeGreaterThan(0)
    for (const [name, route] of entries) {
      const endpoints: Readonly<Record<string, { readonly method: string; readonly path: string }>> | undefined =
        AdminContract.groups[route.group]?.endpoints
      const endpoint = endpoints?.[name]
      expect(endpoint, `${route.group}.${name}`).toBeDefined()
      expect({ name, method: endpoint?.method, path: endpoint?.path }).toEqual({
        name,
        method: route.method,
        path: route.path
      })
    }
  })

  it("are operations of /admin/openapi.json with that method", () => {
    const document = openApiDocument("test")
    for (const [name, route] of entries) {
      const path = route.path.replace(/:(\w+)/g, "{$1}")
      const item = document.paths[path] as Record<string, { readonly operationId: string }> | undefined
      expect(item?.[route.method.toLowerCase()]?.operationId, `${route.method} ${path}`).toBe(
        `${route.group}.${name}`
      )
    }
  })
})

describe("the console's own files", () => {
  // The console's tsconfig has Node's types because the contract's schemas use Node (Buffer,
  // node:crypto); the console runs in a browser, so its own files are checked here without them.
  const program = () => {
    const configPath = Path.join(consoleDir, "tsconfig.json")
    const { config } = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path))
    const parsed = ts.parseJsonConfigFileContent(config, ts.sys, consoleDir, { types: [] }, configPath)
    const created = ts.createProgram(parsed.fileNames, parsed.options)
    return { program: created, files: created.getSourceFiles().filter((file) => file.fileName.startsWith(consoleSrc)) }
  }

  it("compile without Node's types, and import what is outside the console only as types", () => {
    const { files, program: created } = program()
    expect(files.length).toBeGreaterThan(10)
    const problems: Array<string> = []
    for (const file of files) {
      for (const diagnostic of [...created.getSyntacticDiagnostics(file), ...created.getSemanticDiagnostics(file)]) {
        const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
        problems.push(
          `${Path.relative(repoRoot, file.fileName)}:${line + 1} ${
            ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")
          }`
        )
      }
      for (const statement of file.statements) {
        if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
        const specifier = statement.moduleSpecifier.text
        const outside = specifier.startsWith(".")
          ? !Path.resolve(Path.dirname(file.fileName), specifier).startsWith(consoleSrc)
          : specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("@effect/")
        const clause = statement.importClause
        const typeOnly = clause !== undefined && (clause.isTypeOnly || (
          clause.name === undefined && clause.namedBindings !== undefined &&
          ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.every((e) => e.isTypeOnly)
        ))
        if (outside && !typeOnly) {
          problems.push(`${Path.relative(repoRoot, file.fileName)}: imports ${specifier} at run time`)
        }
      }
    }
    expect(problems).toEqual([])
  })
})
