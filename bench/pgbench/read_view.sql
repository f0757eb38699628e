-- point read by primary key through the live view (ids lo..hi are live items)
\set id random(:lo, :hi)
SELECT doc FROM rd_live WHERE id = :id;
