-- point read by primary key on the base table (ids lo..hi are live items)
\set id random(:lo, :hi)
SELECT doc FROM rd WHERE id = :id;
