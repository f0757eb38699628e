-- mixed OLTP, 20%: update of a random live id through the view (restamps _ts)
\set id random(1, :nlive)
\set n random(1, 1000000)
UPDATE ol_live SET doc = doc || jsonb_build_object('n', :n::integer) WHERE id = :id;
