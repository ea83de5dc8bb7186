import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "bench/results/**", "console/dist/**", "data/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  { languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } } },
  // Plain JavaScript, and the consumer project the package test installs into (outside the tsconfig), lint untyped.
  { files: ["**/*.mjs", "**/*.js", "test/package/consumer/**"], ...tseslint.configs.disableTypeChecked },
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
    // Tests, benchmarks and scripts read JSON answers as they come (`any`); the promise rules and the rest of the
    // type-checked set still hold there.
    files: ["test/**/*.ts", "bench/**/*.ts", "scripts/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/no-unsafe-argument": "off"
    }
  },
  {
    // These programs are the users' code as written (calls not awaited, then close), run in child processes to show
    // that nothing is lost and nothing becomes an unhandled rejection.
    files: ["test/client/child/**/*.ts"],
    rules: { "@typescript-eslint/no-floating-promises": "off" }
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
  },
  {
    // The console runs in the browser: nothing of Node, and the server's modules (the admin contract) only as types.
    files: ["console/src/**/*.ts", "console/src/**/*.tsx"],
    rules: {
      "no-restricted-globals": ["error", "Buffer", "process", "global"],
      "@typescript-eslint/no-restricted-imports": ["error", {
        patterns: [
          { group: ["node:*"], message: "The console runs in the browser." },
          { group: ["**/src/**"], allowTypeImports: true, message: "Import the server's modules as types only." }
        ]
      }]
    }
  }
)
