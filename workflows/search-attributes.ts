import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Typed keys of the custom search attributes (registered from `infra/search-attributes.ts`). */
export const tokenIdKey = defineSearchAttributeKey('TokenId', SearchAttributeType.KEYWORD);
export const ownerIdKey = defineSearchAttributeKey('OwnerId', SearchAttributeType.KEYWORD);
export const bearerIdKey = defineSearchAttributeKey('BearerId', SearchAttributeType.KEYWORD);
export const businessStatusKey = defineSearchAttributeKey('BusinessStatus', SearchAttributeType.KEYWORD);
export const referenceIdKey = defineSearchAttributeKey('ReferenceId', SearchAttributeType.KEYWORD);
/** The device of a PLC limit increase request (workflows/limit-review.ts). */
export const deviceIdKey = defineSearchAttributeKey('DeviceId', SearchAttributeType.KEYWORD);
