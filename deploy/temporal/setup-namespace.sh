#!/bin/sh
# Creates the service's namespace and its custom search attributes (infra/search-attributes.ts).
set -eu
temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 \
  || temporal operator namespace create --namespace "$NAMESPACE" --retention 30d
for attribute in TokenId OwnerId BearerId BusinessStatus ReferenceId DeviceId; do
  temporal operator search-attribute create --namespace "$NAMESPACE" --name "$attribute" --type Keyword 2>/dev/null \
    || echo "search attribute $attribute already exists"
done
