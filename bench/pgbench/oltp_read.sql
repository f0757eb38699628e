-- mixed OLTP, 80%: point read of a random live id through the view
\set id random(1, :nlive)
SELECT doc FROM ol_live WHERE id = :id;
