-- single-row INSERT of a ~200 B document with its own ttl (weight 3 of 10)
INSERT INTO ins (doc) VALUES ('{"tenantId": "tenant-00042", "userId": "user-332598", "type": "order", "status": "open", "amount": 420.42, "tags": ["t8", "t19"], "note": "a1d0c6e83f027327d8461063f4ac58a6", "ttl": 3600}');
