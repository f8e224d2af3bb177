-- Temporal keeps its own state in two databases of the same PostgreSQL, owned by its own role.
CREATE ROLE temporal LOGIN PASSWORD 'temporal';
CREATE DATABASE temporal OWNER temporal;
CREATE DATABASE temporal_visibility OWNER temporal;
