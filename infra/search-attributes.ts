/**
 * The custom search attributes every money workflow carries, so an admin can find any money
 * movement in the Temporal UI (e.g. `TokenId = "..."` or `OwnerId = "..."`). Registered on the
 * embedded dev server at start, by the test run, and by docker-compose's setup job; the workflows
 * declare the same keys in `workflows/search-attributes.ts`.
 */
export const customSearchAttributes = {
  TokenId: 'Keyword',
  OwnerId: 'Keyword',
  BearerId: 'Keyword',
  BusinessStatus: 'Keyword',
  ReferenceId: 'Keyword',
  DeviceId: 'Keyword',
} as const;

export function searchAttributeFlags(): string[] {
  return Object.entries(customSearchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
}
