// Lets `node -r ./bench/lib/register.cjs bench/<script>.ts` run TypeScript directly with the
// project's own swc settings (.swcrc: decorators, CommonJS, @almanac/* path aliases). Node 20
// cannot strip types itself and ts-node is not a dependency; @swc/core already is.
const { transformFileSync } = require('@swc/core');
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
require.extensions['.ts'] = function compileTs(module, filename) {
  const { code } = transformFileSync(filename, {
    swcrc: true,
    configFile: path.join(root, '.swcrc'),
    cwd: root,
    sourceMaps: 'inline',
  });
  module._compile(code, filename);
};
