#!/bin/sh
# Creates or upgrades Temporal's schemas on PostgreSQL with temporal-sql-tool (admin-tools image).
set -eu
schema_dir=/etc/temporal/schema/postgresql/v12
for db in temporal temporal_visibility; do
  case "$db" in
    temporal) dir="$schema_dir/temporal/versioned" ;;
    *) dir="$schema_dir/visibility/versioned" ;;
  esac
  temporal-sql-tool --plugin "$SQL_PLUGIN" --ep "$SQL_HOST" -p "$SQL_PORT" -u "$SQL_USER" --pw "$SQL_PASSWORD" --db "$db" setup-schema -v 0.0
  temporal-sql-tool --plugin "$SQL_PLUGIN" --ep "$SQL_HOST" -p "$SQL_PORT" -u "$SQL_USER" --pw "$SQL_PASSWORD" --db "$db" update-schema -d "$dir"
done
