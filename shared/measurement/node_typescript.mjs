// TypeScript for `node --test` through the project's own `typescript` package, for a project that has it and no tsx:
//   node --import /path/node_typescript.mjs --test FILE
// registers module hooks (node:module register, Node 20.6+) that transpile .ts, .mts and .cts files with the
// project's typescript (transpileModule: types are erased, not checked), found from the working folder's
// node_modules, and resolve an import of `x.js` to `x.ts` where only that exists (TypeScript's own convention). Node's
// test runner hands --import on to the child that runs the tests, so the hooks run there, beside the code.
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./node_typescript_hooks.mjs", import.meta.url, { data: { base: pathToFileURL(process.cwd() + "/").href } });
