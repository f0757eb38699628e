-- filtered read by an indexed JSONB property on the base table
-- (@EXPR@ is replaced by bench/run: ttl.field(doc, 'tenantId') when the
-- extension has it, else doc ->> 'tenantId')
\set t random(0, :nt - 1)
SELECT id, doc FROM rd WHERE @EXPR@ = 'tenant-' || lpad(:t::text, 5, '0');
