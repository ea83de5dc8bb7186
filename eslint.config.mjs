import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "bench/results/**", "console/dist/**", "data/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "require-yield": "off"
    }
  },
  {
    // The client library and the domain it validates with load Effect module by module: the "effect"
    // barrel loads every module, ~6 MB more RSS for a plain-Node user of the Promise client (measured).
    files: ["src/client/**/*.ts", "src/domain/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: [{ name: "effect", message: "Import the module: import * as Effect from \"effect/Effect\"." }]
      }]
    }
  }
)
