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
    // V8 allocates a function literal assigned straight to a property in the old generation (its guess for methods);
    // made per request or per job, it keeps that call's whole closure context past every young-generation collection.
    // Bind it to a name first.
    files: ["src/**/*.ts"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector:
          "AssignmentExpression[left.type='MemberExpression'][right.type=/^(ArrowFunction|Function)Expression$/]",
        message: "Bind the function to a const first: assigned straight to a property, V8 allocates it in the old " +
          "generation, where it keeps its closure context alive until a full collection."
      }]
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
