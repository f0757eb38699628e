-- row 17e: OLTP on the two live leaves of ro (days 9 and 10), each
-- statement naming its leaf's day so that the plan prunes to it
\set k random(9, 10)
\set i random(1, :nleaf)
\set n random(1, 1000000)
\if :k = 9
UPDATE ro SET doc = doc || jsonb_build_object('n', :n::integer) WHERE created_at = '2030-01-09 12:00+00' AND id = 9 * :nleaf + :i;
SELECT doc FROM ro WHERE created_at = '2030-01-09 12:00+00' AND id = 9 * :nleaf + :i - 1;
\else
UPDATE ro SET doc = doc || jsonb_build_object('n', :n::integer) WHERE created_at = '2030-01-10 12:00+00' AND id = 10 * :nleaf + :i;
SELECT doc FROM ro WHERE created_at = '2030-01-10 12:00+00' AND id = 10 * :nleaf + :i - 1;
\endif
