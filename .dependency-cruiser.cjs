/**
 * The house's import rules between folders (docs/architecture.md, "Layers"), checked by
 * dependency-cruiser in `npm run lint` beside ESLint. ESLint keeps what a file may use (no Node
 * built-ins or I/O in workflows/ and src/); this file keeps which folder may import which, and
 * that no files import each other in a circle, type-only imports included (an `import type`
 * circle still ties two rooms together; ESLint's import plugins skip type imports).
 *
 * Imports that break a rule today and wait to be moved are listed, each by file, in
 * `.dependency-cruiser-known-violations.json` (`npm run lint:imports:baseline` writes it anew):
 * the check fails on any violation not in that list, so the count only goes down.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'no files import each other in a circle, type-only imports included',
      from: {},
      to: { circular: true },
    },
    {
      name: 'routes-call-services',
      severity: 'error',
      comment: 'a route parses, authenticates, calls a service and shapes the answer: it does not write to db/ itself',
      from: { path: '^api/routes/' },
      to: { path: '^db/', pathNot: '^db/pool\\.ts$' },
    },
    {
      name: 'api-not-temporal',
      severity: 'error',
      comment: 'every workflow start, signal and update goes through a service, not the API layer',
      from: { path: '^api/' },
      to: { path: '(^|/)node_modules/@temporalio/client/|^services/temporal\\.ts$' },
    },
    {
      name: 'activities-call-down',
      severity: 'error',
      comment: 'activities call down into db/ and the gateway port, never up into services, workflows or the API',
      from: { path: '^activities/' },
      to: { path: '^(services|workflows|api|worker)/' },
    },
    {
      name: 'db-is-the-bottom',
      severity: 'error',
      comment: 'db/ is the store: it imports only src/ (the domain), its own files and the driver',
      from: { path: '^db/' },
      to: { path: '^(services|activities|workflows|api|worker|gateway|bin|scripts|simulator)/' },
    },
    {
      name: 'services-not-api',
      severity: 'error',
      comment: 'services own the business flows for every caller (API, worker, tools): they do not import the HTTP layer or the worker',
      from: { path: '^services/' },
      to: { path: '^(api|worker)/' },
    },
    {
      name: 'gateway-is-a-port',
      severity: 'error',
      comment: "gateway/ answers in the service's own vocabulary; it depends on nothing of ours but the domain",
      from: { path: '^gateway/' },
      to: { path: '^(services|activities|workflows|api|worker|db)/' },
    },
    {
      name: 'src-is-pure',
      severity: 'error',
      comment: "src/ is the pure domain: it imports nothing outside it but the gateway's vocabulary",
      from: { path: '^src/' },
      to: { path: '^(api|db|services|activities|workflows|worker|infra|bin|scripts|simulator)/|^gateway/(?!status\\.ts$|types\\.ts$)' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: ['(^|/)node_modules/', '(^|/)dist/', '^test/', '^bench/', '^\\.data/'] },
    doNotFollow: { path: ['(^|/)node_modules/'] },
  },
};
